# %% [markdown]
# # Reading psim outputs with Python polars
#
# A percent-format notebook: run it as a script,
#
#     pip install polars
#     python3 notebooks/analysis.py DIR [--allow-incomplete]
#
# or open it cell by cell in VS Code / Jupyter (via jupytext). `DIR` is one
# run's output directory (`psim run SCENARIO --out DIR`).
#
# It prints FCT and slowdown percentiles by flow-size bucket and the sorted
# per-host goodput. These are **the same numbers** as `psim-analyze DIR`
# (same buckets, same linear-interpolation percentiles, same goodput formula;
# see docs/analysis.md): CI runs both on one run and compares them.
# matplotlib is optional: with it, the last cell also draws the FCT CDF.

# %%
import json
import pathlib
import sys
import zlib

import polars as pl

ARGS = [a for a in sys.argv[1:] if not a.startswith("-")]
ALLOW_INCOMPLETE = "--allow-incomplete" in sys.argv[1:]
DIR = pathlib.Path(ARGS[0] if ARGS else "out/run")
BUCKETS = [10_000, 100_000, 1_000_000, 10_000_000]  # upper edges, bytes, as psim-analyze --buckets
QUANTILES = {"p50": 0.5, "p99": 0.99, "p999": 0.999}

# %% [markdown]
# ## The run, checked against its manifest
# `manifest.json` lists every file the run wrote (`parts`) with its row
# count, size and CRC-32 (`zlib.crc32`); it is written last. As `psim flows`
# and `psim-analyze` do, a run that is incomplete or disagrees with its
# manifest (a part missing, extra, truncated or changed) is refused with a
# one-line error naming the part, unless `--allow-incomplete`, which reads
# the flows parts that are there and prints each problem as a warning.


# %%
def crc32_of(path):
    crc, size = 0, 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            crc, size = zlib.crc32(block, crc), size + len(block)
    return size, crc


def check_run(run):
    """The manifest and the list of problems (empty for a good run)."""
    try:
        m = json.loads((run / "manifest.json").read_text())
    except FileNotFoundError:
        return None, [f"no manifest at {run / 'manifest.json'} (the run is incomplete or this is not a psim output directory)"]
    except (OSError, ValueError) as e:
        return None, [f"unreadable manifest {run / 'manifest.json'}: {e}"]
    problems = [] if m.get("complete") else [f"{run / 'manifest.json'}: the run is incomplete (\"complete\": false)"]
    listed = set()
    for p in m["parts"]:
        path = run / p["path"]
        listed.add(p["path"])
        if not path.is_file():
            problems.append(f"part {path} is listed in the manifest but missing")
            continue
        size, crc = crc32_of(path)
        if size != p["bytes"]:
            problems.append(f"part {path} does not match the manifest: {size} bytes, the manifest says {p['bytes']}")
        elif crc != p["crc32"]:
            problems.append(f"part {path} does not match the manifest: crc32 {crc:#010x}, the manifest says {p['crc32']:#010x}")
        elif path.suffix == ".parquet" and (n := pl.scan_parquet(path).select(pl.len()).collect().item()) != p["rows"]:
            problems.append(f"part {path} does not match the manifest: {n} rows, the manifest says {p['rows']}")
    on_disk = [f"{d}/{f.name}" for d in ("flows", "packets", "queues", "tofino") if (run / d).is_dir() for f in sorted((run / d).glob("part-*"))]
    on_disk += ["queues.h5"] if (run / "queues.h5").exists() else []
    problems += [f"part {run / p} is not listed in the manifest" for p in on_disk if p not in listed]
    return m, problems


manifest, problems = check_run(DIR)
if problems and not ALLOW_INCOMPLETE:
    sys.exit(f"error: {problems[0]} (--allow-incomplete reads what is there)")
for p in problems:
    print(f"warning: {p}", file=sys.stderr)
if manifest is None:
    sys.exit("error: --allow-incomplete cannot read a run without a manifest (its config is needed)")


def parts(table):
    """The parts of `table` to read: the manifest's, or with --allow-incomplete what is on disk."""
    if problems:
        return [str(p) for p in sorted((DIR / table).glob("part-*.parquet"))]
    return [str(DIR / p["path"]) for p in manifest["parts"] if p["path"].startswith(f"{table}/")]


sim_end_ps = manifest["sim_end_ps"]
flows = pl.scan_parquet(parts("flows"))  # lazy, all parts at once
print(f"run {DIR}: {manifest['config'].get('name')}, sim_end {sim_end_ps / 1e6:.3f} us")

# %% [markdown]
# ## FCT and slowdown by flow-size bucket
# Bucket i holds sizes in (edge[i-1], edge[i]] (the first from 0), the last
# bucket everything above the last edge. FCT in microseconds; slowdown =
# fct_ps / ideal_fct_ps where ideal_fct_ps is non-null and non-zero.
# Percentiles: linear interpolation (polars `interpolation="linear"`, numpy's default).

# %%
bucket = pl.lit(len(BUCKETS), dtype=pl.UInt32)
for i, edge in reversed(list(enumerate(BUCKETS))):
    bucket = pl.when(pl.col("size_bytes") <= edge).then(pl.lit(i, dtype=pl.UInt32)).otherwise(bucket)

finished = flows.filter(pl.col("fct_ps").is_not_null()).with_columns(
    fct_us=pl.col("fct_ps").cast(pl.Float64) / 1e6,
    slowdown=pl.when(pl.col("ideal_fct_ps") > 0)
    .then(pl.col("fct_ps").cast(pl.Float64) / pl.col("ideal_fct_ps").cast(pl.Float64))
    .otherwise(None),
)
aggs = [pl.col("fct_us").count().alias("flows")]
aggs += [pl.col("fct_us").quantile(q, interpolation="linear").alias(f"fct_{n}_us") for n, q in QUANTILES.items()]
aggs += [pl.col("slowdown").count().alias("slowdown_flows")]
aggs += [pl.col("slowdown").quantile(q, interpolation="linear").alias(f"slowdown_{n}") for n, q in QUANTILES.items()]
aggs += [pl.col("fct_us").mean().alias("fct_mean_us"), pl.col("slowdown").mean().alias("slowdown_mean")]

edges = [0] + BUCKETS
labels = pl.DataFrame(
    {
        "bucket": list(range(len(BUCKETS) + 1)),
        "label": [f"[0, {BUCKETS[0]}]"]
        + [f"({edges[i]}, {edges[i + 1]}]" for i in range(1, len(BUCKETS))]
        + [f"> {BUCKETS[-1]}"],
    },
    schema={"bucket": pl.UInt32, "label": pl.Utf8},
)
by_size = (
    finished.filter(pl.col("size_bytes").is_not_null())
    .with_columns(bucket=bucket)
    .group_by("bucket")
    .agg(aggs)
    .collect()
)
by_size = labels.join(by_size, on="bucket", how="left").with_columns(
    pl.col("flows").fill_null(0), pl.col("slowdown_flows").fill_null(0)
)
overall = finished.select(aggs).collect().with_columns(bucket=pl.lit(None, dtype=pl.UInt32), label=pl.lit("all"))
fct_table = pl.concat([by_size, overall.select(by_size.columns)])
with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=3):
    print(fct_table.drop("bucket"))

# %% [markdown]
# ## Per-host goodput, sorted ascending (NDP Fig. 14)
# Per destination host (every `dst` of at least one flow):
# sum(bytes_received) x 8 / sim_end_ps, in Gb/s (bits per ps x 1000).

# %%
goodput = (
    flows.group_by("dst")
    .agg(bytes_received=pl.col("bytes_received").sum())
    .with_columns(goodput_gbps=pl.col("bytes_received").cast(pl.Float64) * 8 / sim_end_ps * 1000)
    .sort(["goodput_gbps", "dst"])
    .with_row_index("rank")
    .rename({"dst": "host"})
    .collect()
)
with pl.Config(tbl_rows=-1, float_precision=4):
    print(goodput)

# %% [markdown]
# ## Network utilisation
# total goodput / (hosts x host link rate): fattree hosts = k^3/4 x
# oversubscription, leafspine hosts = leaves x hosts_per_leaf; rate =
# topology.host_link.gbps, else topology.link_gbps.

# %%
topo = manifest["config"]["topology"]
if topo["kind"] == "fattree":
    hosts = topo["k"] ** 3 // 4 * topo.get("oversubscription", 1)
else:
    hosts = topo["leaves"] * topo["hosts_per_leaf"]
rate = (topo.get("host_link") or {}).get("gbps") or topo.get("link_gbps", 10.0)
total_gbps = goodput["goodput_gbps"].sum()
print(f"utilisation = {total_gbps:.4f} Gb/s / ({hosts} x {rate} Gb/s) = {total_gbps / (hosts * rate):.4f}")

# %% [markdown]
# ## Queue traces (runs with `[trace.queues]`, Parquet format)
# The ports whose queue peaked highest (as in psim-analyze's queue_occupancy
# plot) with their link utilisation, busy time / run time. Columns are
# defined in docs/outputs.md.

# %%
if parts("queues"):
    queues = pl.scan_parquet(parts("queues"))
    busiest = (
        queues.group_by("node", "port")
        .agg(
            peak_queue_bytes=pl.col("queue_bytes").max(),
            tx_bytes=pl.col("tx_bytes").sum(),
            busy_ps=pl.col("busy_ps").sum(),
        )
        .with_columns(utilisation=pl.col("busy_ps") / sim_end_ps)
        .sort(["peak_queue_bytes", "node", "port"], descending=[True, False, False])
        .head(5)
        .collect()
    )
    print(busiest)
    assert busiest["utilisation"].max() <= 1.0, "a link busier than the run is long"
    sent = manifest["packets"]["ports"]["dequeued_bytes"]
    total_tx = queues.select(pl.col("tx_bytes").sum()).collect().item()
    assert total_tx == sent, (total_tx, sent)  # holds when every port is traced
else:
    print("no queue traces (set [trace.queues] enabled = true to record them)")

# %% [markdown]
# ## Optional: the FCT CDF (needs matplotlib)

# %%
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fct = finished.select("fct_us").sort("fct_us").collect()["fct_us"]
    if len(fct):
        plt.step(fct, [(i + 1) / len(fct) for i in range(len(fct))], where="post")
        plt.xscale("log")
        plt.xlabel("FCT (us)")
        plt.ylabel("fraction of flows")
        plt.savefig(DIR / "notebook_fct_cdf.png")
        print(f"wrote {DIR / 'notebook_fct_cdf.png'}")
except ImportError:
    print("matplotlib not installed: no plot (optional)")

# %% [markdown]
# ## Optional: check against psim-analyze
# `python3 notebooks/analysis.py DIR REPORT_DIR`, where REPORT_DIR holds
# `psim-analyze DIR --format csv --out REPORT_DIR`: asserts that both give the
# same percentiles and goodput (relative difference below 1e-9).

# %%
if len(ARGS) > 1:
    report = pathlib.Path(ARGS[1])
    theirs = pl.read_csv(report / "fct_by_size.csv", infer_schema_length=0)
    cols = [c for c in fct_table.columns if c not in ("bucket", "label")]
    for mine, row in zip(fct_table.iter_rows(named=True), theirs.iter_rows(named=True)):
        assert mine["label"] == row["bucket"], (mine["label"], row["bucket"])
        for c in cols:
            a, b = mine[c], row[c]
            if a is None or b in (None, ""):
                assert a is None and b in (None, ""), (mine["label"], c, a, b)
            else:
                assert abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a))), (mine["label"], c, a, b)
    assert len(theirs) == len(fct_table), "bucket rows differ"
    g = pl.read_csv(report / "goodput.csv")
    assert g["host"].to_list() == goodput["host"].to_list(), "goodput order differs"
    for a, b in zip(goodput["goodput_gbps"], g["goodput_gbps"]):
        assert abs(a - b) <= 1e-9 * max(1.0, abs(a)), (a, b)
    print(f"OK: the same numbers as psim-analyze ({report})")
