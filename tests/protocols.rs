//! Every protocol in the table (`psim/src/transport/mod.rs`), built from its
//! defaults alone, runs a tiny scenario: a k = 4 FatTree with an incast of
//! two flows and a pair of flows back the other way. A protocol with
//! reliability (one with an ideal FCT) must complete every flow; one without
//! (CBR) must send until its flows end or the stop time. A newly registered
//! protocol is covered without touching this file.

use psim::transport::Protocol;
use psim_integration_tests::{run, scenario};

fn tiny(proto: &str) -> String {
    format!(
        "seed = 3\nstop_us = 2000000\n\
         [topology]\nkind = \"fattree\"\nk = 4\n\
         [[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\nreceiver = 3\nsenders = 2\nsize_bytes = 100000\n\
         [[traffic]]\nprotocol = \"{proto}\"\npattern = \"incast\"\nreceiver = 12\nsenders = 1\nsize_bytes = 30000\n"
    )
}

#[test]
fn every_registered_protocol_runs_from_its_defaults() {
    for proto in Protocol::ALL {
        // A protocol that needs ECN marks (DCQCN) is refused over the default
        // drop-tail switches, naming `switch.queue.kind`: give it marking ones.
        let text = tiny(proto.name());
        let path = std::path::Path::new("inline.toml");
        let sets: &[&str] = match psim::config::Scenario::from_str(&text, path, &[]) {
            Err(e) if e.to_string().contains("switch.queue.kind") => {
                &["switch.queue.kind=\"ecn_ramp\""]
            }
            _ => &[],
        };
        let r = run(&scenario(&text, sets), 1, 1);
        assert_eq!(r.flows.len(), 3, "{}: flows", proto.name());
        for f in &r.flows {
            assert_eq!(f.protocol, proto.name());
            assert!(
                f.bytes_sent > 0,
                "{}: flow {} sent nothing",
                proto.name(),
                f.flow_id
            );
            if proto.has_ideal_fct() {
                assert!(
                    f.finish_ps.is_some() && f.bytes_received == f.size_bytes.unwrap(),
                    "{}: flow {} did not complete: {f:?}",
                    proto.name(),
                    f.flow_id
                );
                assert!(f.ideal_fct_ps.is_some(), "{}: no ideal FCT", proto.name());
            }
        }
    }
}

#[test]
fn an_unknown_protocol_error_lists_every_registered_name() {
    let text = tiny("quic");
    let path = std::path::Path::new("inline.toml");
    let e = psim::config::Scenario::from_str(&text, path, &[]).unwrap_err();
    let msg = e.to_string();
    for name in Protocol::NAMES {
        assert!(msg.contains(name), "{msg}");
    }
}
