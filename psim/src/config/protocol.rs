//! `[protocol]`: the parameters of every transport.

use super::error::{bad, positive_us, rate, ConfigError};
use crate::transport::{
    CbrParams, DctcpParams, MptcpParams, NdpParams, ProtocolParams, Spray, TcpParams,
};
use crate::units::us_to_ps;
use serde::{Deserialize, Serialize};

/// `[protocol]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolFile {
    /// `[protocol.cbr]`.
    #[serde(default)]
    pub cbr: CbrFile,
    /// `[protocol.ndp]` (also used by pHost).
    #[serde(default)]
    pub ndp: NdpFile,
    /// `[protocol.tcp]` (also used by DCTCP and MPTCP subflows).
    #[serde(default)]
    pub tcp: TcpFile,
    /// `[protocol.dctcp]`.
    #[serde(default)]
    pub dctcp: DctcpFile,
    /// `[protocol.mptcp]`.
    #[serde(default)]
    pub mptcp: MptcpFile,
}

/// `[protocol.tcp]`: see `transport/tcp.rs` for defaults and sources.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpFile {
    /// Payload bytes per segment (default 9000).
    pub mss_bytes: Option<u32>,
    /// Initial window, segments (default 10).
    pub iw_packets: Option<u32>,
    /// Minimum RTO, µs (default 200000).
    pub min_rto_us: Option<f64>,
    /// RTO before the first RTT sample, µs (default 1000000).
    pub initial_rto_us: Option<f64>,
    /// Largest backed-off RTO, µs (default 60000000).
    pub max_rto_us: Option<f64>,
    /// Duplicate ACKs that trigger fast retransmit (default 3).
    pub dupack_threshold: Option<u32>,
    /// RFC 5827 early retransmit (default true).
    pub early_retransmit: Option<bool>,
    /// ACK every second segment (default false).
    pub delayed_ack: Option<bool>,
    /// Delayed-ACK timeout, µs (default 40000).
    pub delayed_ack_us: Option<f64>,
    /// SYN / SYN-ACK before data (default false).
    pub handshake: Option<bool>,
    /// RFC 3168 ECN for plain TCP (default false).
    pub ecn: Option<bool>,
    /// Receiver window, segments (default 0 = unlimited).
    pub rwnd_packets: Option<u32>,
}

/// `[protocol.dctcp]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DctcpFile {
    /// Estimation gain (default 1/16).
    pub g: Option<f64>,
    /// Alpha before the first window (default 1).
    pub initial_alpha: Option<f64>,
}

/// `[protocol.mptcp]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpFile {
    /// Subflows per connection (default 8).
    pub subflows: Option<u32>,
}

/// `[protocol.ndp]`: see `transport/ndp.rs` for defaults and sources.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NdpFile {
    /// Initial window, packets (default 23).
    pub iw_packets: Option<u32>,
    /// Payload bytes per packet (default 9000).
    pub mtu_bytes: Option<u32>,
    /// Minimum RTO, µs (default 1000).
    pub min_rto_us: Option<f64>,
    /// `"permute"` (default) or `"random"`.
    pub spray: Option<Spray>,
    /// Path penalty (default true).
    pub path_penalty: Option<bool>,
    /// Pull pacing jitter, fraction of the interval (default 0).
    pub pull_jitter: Option<f64>,
}

/// `[protocol.cbr]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CbrFile {
    /// Sending rate, Gb/s (default: the NIC rate).
    pub rate_gbps: Option<f64>,
    /// Wire bytes per packet (default 1500).
    pub packet_bytes: Option<u32>,
}

/// Builds NDP parameters from `[protocol.ndp]`.
fn ndp_params(f: &NdpFile) -> Result<NdpParams, ConfigError> {
    let d = NdpParams::default();
    let iw = f.iw_packets.unwrap_or(d.iw_packets);
    if iw == 0 {
        return Err(bad("protocol.ndp.iw_packets", 0, "must be at least 1"));
    }
    let mtu = f.mtu_bytes.unwrap_or(d.mtu_bytes);
    if mtu == 0 || mtu > 65_000 {
        return Err(bad("protocol.ndp.mtu_bytes", mtu, "must be 1 to 65000"));
    }
    let min_rto_ps = match f.min_rto_us {
        Some(us) if us.is_nan() || us <= 0.0 => {
            return Err(bad("protocol.ndp.min_rto_us", us, "must be positive"))
        }
        Some(us) => us_to_ps(us),
        None => d.min_rto_ps,
    };
    let pull_jitter = f.pull_jitter.unwrap_or(0.0);
    if !(0.0..1.0).contains(&pull_jitter) {
        return Err(bad(
            "protocol.ndp.pull_jitter",
            pull_jitter,
            "must be in [0, 1)",
        ));
    }
    Ok(NdpParams {
        iw_packets: iw,
        mtu_bytes: mtu,
        min_rto_ps,
        spray: f.spray.unwrap_or(d.spray),
        path_penalty: f.path_penalty.unwrap_or(d.path_penalty),
        pull_jitter,
    })
}

/// Builds TCP parameters from `[protocol.tcp]`.
fn tcp_params(f: &TcpFile) -> Result<TcpParams, ConfigError> {
    let d = TcpParams::default();
    let mss = f.mss_bytes.unwrap_or(d.mss_bytes);
    if mss == 0 || mss > 65_000 {
        return Err(bad("protocol.tcp.mss_bytes", mss, "must be 1 to 65000"));
    }
    let iw = f.iw_packets.unwrap_or(d.iw_packets);
    if iw == 0 {
        return Err(bad("protocol.tcp.iw_packets", 0, "must be at least 1"));
    }
    let dupack_threshold = f.dupack_threshold.unwrap_or(d.dupack_threshold);
    if dupack_threshold == 0 {
        return Err(bad(
            "protocol.tcp.dupack_threshold",
            0,
            "must be at least 1",
        ));
    }
    let min_rto_ps = positive_us("protocol.tcp.min_rto_us", f.min_rto_us, d.min_rto_ps)?;
    let max_rto_ps = positive_us("protocol.tcp.max_rto_us", f.max_rto_us, d.max_rto_ps)?;
    if max_rto_ps < min_rto_ps {
        return Err(bad(
            "protocol.tcp.max_rto_us",
            max_rto_ps as f64 / 1e6,
            "must be at least min_rto_us",
        ));
    }
    Ok(TcpParams {
        mss_bytes: mss,
        iw_packets: iw,
        min_rto_ps,
        initial_rto_ps: positive_us(
            "protocol.tcp.initial_rto_us",
            f.initial_rto_us,
            d.initial_rto_ps,
        )?,
        max_rto_ps,
        dupack_threshold,
        early_retransmit: f.early_retransmit.unwrap_or(d.early_retransmit),
        delayed_ack: f.delayed_ack.unwrap_or(d.delayed_ack),
        delayed_ack_ps: positive_us(
            "protocol.tcp.delayed_ack_us",
            f.delayed_ack_us,
            d.delayed_ack_ps,
        )?,
        handshake: f.handshake.unwrap_or(d.handshake),
        ecn: f.ecn.unwrap_or(d.ecn),
        rwnd_packets: f.rwnd_packets.unwrap_or(d.rwnd_packets),
    })
}

/// Builds DCTCP parameters from `[protocol.dctcp]`.
fn dctcp_params(f: &DctcpFile) -> Result<DctcpParams, ConfigError> {
    let d = DctcpParams::default();
    let g = f.g.unwrap_or(d.g);
    if !(g > 0.0 && g <= 1.0) {
        return Err(bad("protocol.dctcp.g", g, "must be in (0, 1]"));
    }
    let initial_alpha = f.initial_alpha.unwrap_or(d.initial_alpha);
    if !(0.0..=1.0).contains(&initial_alpha) {
        return Err(bad(
            "protocol.dctcp.initial_alpha",
            initial_alpha,
            "must be in [0, 1]",
        ));
    }
    Ok(DctcpParams { g, initial_alpha })
}

/// Builds MPTCP parameters from `[protocol.mptcp]`.
fn mptcp_params(f: &MptcpFile) -> Result<MptcpParams, ConfigError> {
    let subflows = f.subflows.unwrap_or(MptcpParams::default().subflows);
    if subflows == 0 || subflows > 255 {
        return Err(bad("protocol.mptcp.subflows", subflows, "must be 1 to 255"));
    }
    Ok(MptcpParams { subflows })
}

/// Validates `[protocol]` into the parameters of every transport.
pub(crate) fn protocol_params(f: &ProtocolFile) -> Result<ProtocolParams, ConfigError> {
    let mut protocols = ProtocolParams {
        cbr: CbrParams::default(),
        ndp: ndp_params(&f.ndp)?,
        tcp: tcp_params(&f.tcp)?,
        dctcp: dctcp_params(&f.dctcp)?,
        mptcp: mptcp_params(&f.mptcp)?,
    };
    if let Some(g) = f.cbr.rate_gbps {
        protocols.cbr.rate_bps = Some(rate("protocol.cbr.rate_gbps", g)?);
    }
    if let Some(b) = f.cbr.packet_bytes {
        if b <= crate::packet::HEADER_BYTES {
            return Err(bad(
                "protocol.cbr.packet_bytes",
                b,
                "must exceed the 64-byte header",
            ));
        }
        protocols.cbr.packet_bytes = b;
    }
    Ok(protocols)
}
