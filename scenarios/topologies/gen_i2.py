#!/usr/bin/env python3
"""Writes the Internet2 topology files of this directory (run it here).

Source of every number: the UPS scenario files ([UPS] `tcl/ex/ups/scenarios/*/topo.txt`,
docs/references.md TA7 and §3.6); the derived variants are marked in each file's header.
"""

# Core links of the UPS Internet2 scenarios: (a, b, Mb/s), 10 ms each.
CORE = [
    (0, 1, 5556), (0, 2, 7778), (0, 3, 14445), (1, 2, 3334),
    (2, 4, 3334), (1, 5, 5556), (4, 5, 1112), (8, 9, 2223),
    (3, 5, 3334), (3, 4, 5556), (5, 6, 4445), (3, 6, 10000),
    (3, 7, 14445), (7, 8, 1112), (6, 8, 8889), (7, 9, 7778),
]


def mbps(x):
    s = f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{s}Mbps"


def tiered(name, header, edge_mbps, access_mbps, scale, core_delay, edge_delay):
    """Cores 0-9; edge switch c + 10k (k = 1..10) on core c; host e + 100 on edge e."""
    lines = header + [
        "# Names keep the UPS node numbers: core cN, edge switch eN, host hN.",
        "# psim host ids (0..99) follow the host lines below: host hN is psim host N - 110.",
        "",
        "switch " + " ".join(f"c{c}" for c in range(10)),
        "switch " + " ".join(f"e{e}" for e in range(10, 110)),
        "host " + " ".join(f"h{h}" for h in range(110, 210)),
        "",
        "# core links",
    ]
    for a, b, r in CORE:
        lines.append(f"link c{a} c{b} {mbps(r / scale)} {core_delay}")
    lines.append("# edge links: core c - edge c + 10k")
    for e in range(10, 110):
        lines.append(f"link c{e % 10} e{e} {mbps(edge_mbps / scale)} {edge_delay}")
    lines.append("# access links: edge e - host e + 100")
    for e in range(10, 110):
        lines.append(f"link e{e} h{e + 100} {mbps(access_mbps / scale)} {edge_delay}")
    open(name, "w").write("\n".join(lines) + "\n")


def flat(name, header, core_delay, access_delay):
    """Cores 0-9; host c + 10k (k = 1..10) directly on core c at 10 Gb/s."""
    lines = header + [
        "# Names keep the UPS node numbers: core cN, host hN.",
        "# psim host ids (0..99) follow the host lines below: host hN is psim host N - 10.",
        "",
        "switch " + " ".join(f"c{c}" for c in range(10)),
        "host " + " ".join(f"h{h}" for h in range(10, 110)),
        "",
        "# core links",
    ]
    for a, b, r in CORE:
        lines.append(f"link c{a} c{b} {mbps(r)} {core_delay}")
    lines.append("# access links: core c - host c + 10k")
    for h in range(10, 110):
        lines.append(f"link c{h % 10} h{h} 10000Mbps {access_delay}")
    open(name, "w").write("\n".join(lines) + "\n")


SRC = "# Source: the UPS authors' ns-2 scenarios ([UPS] tcl/ex/ups/scenarios/*/topo.txt; docs/references.md TA7),"
DUPLEX = "# psim links are duplex: UPS's simplex edge/access pairs become one link with the scenario's queues both ways."

tiered("i2_1g_10g.graph", [
    "# Internet2 \"I2 1G-10G\" ([TH] Ch. 5, Table 5.1): 10 core switches, 16 core links at 10 ms,",
    "# 100 edge switches on 1 Gb/s links, one host per edge switch on a 10 Gb/s access link (1 ms).",
    "# 210 nodes, 216 links.",
    SRC, "# as read in their public copy; core capacities are multiples of about 1.11 Gb/s.", DUPLEX,
], 1000, 10000, 1, "10ms", "1ms")

tiered("i2_1g_1g.graph", [
    "# Internet2 \"I2 1G-1G\" ([TH] Ch. 5, Table 5.1): as i2_1g_10g.graph with 1 Gb/s access links.",
    "# 210 nodes, 216 links.",
    SRC, "# whose public copy lacks this variant: the access rate is our reading of the name (GR1).", DUPLEX,
], 1000, 1000, 1, "10ms", "1ms")

tiered("i2_div10.graph", [
    "# Internet2 \"I2/10\" ([TH] Ch. 5, Table 5.1): I2 1G-1G with every link rate divided by 10,",
    "# delays unchanged (GR1). 210 nodes, 216 links.",
    SRC, "# whose public copy lacks this variant.", DUPLEX,
], 1000, 1000, 10, "10ms", "1ms")

flat("i2_10g_10g.graph", [
    "# Internet2 \"I2 10G-10G\" ([TH] Ch. 5, Table 5.1): the same 10 cores and 16 core links (10 ms),",
    "# with 10 hosts directly on each core switch on 10 Gb/s links (1 ms). 110 nodes, 116 links.",
    SRC, DUPLEX,
], "10ms", "1ms")

flat("i2_10g_10g_us.graph", [
    "# Internet2 \"I2 10G-10G\" with microsecond delays, as the long-lived fairness runs use it",
    "# ([TH] Ch. 5, thesis T38; UPS runs it with -us_delay): core links 10 us, host links 1 us.",
    "# 110 nodes, 116 links.",
    SRC, DUPLEX,
], "10us", "1us")
