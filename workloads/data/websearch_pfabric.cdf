# Web search flow sizes (DCTCP, Alizadeh et al., SIGCOMM 2010) as pFabric's simulations draw
# them (the authors' CDF_dctcp.txt table, in 1460-byte packets; shared/spec/
# rdma-scheduling-params.md §8.1): here in bytes, packets x 1460. No flow is below 6 packets
# (a 15% point mass at 6 packets, the first two lines), then linear between points as the
# authors' sampler interpolates. Mean 1,140.98 packets = 1,665,830.8 B (closed form by hand).
# The tables give packets: set `size_quantum_bytes = 1460` for flows in whole packets.
size_bytes cumulative_fraction
8760 0
8760 0.15
18980 0.2
27740 0.3
48180 0.4
77380 0.53
194180 0.6
973820 0.7
1946180 0.8
4866180 0.9
9733820 0.97
29200000 1.0
