# Data mining flow sizes (VL2, Greenberg et al., SIGCOMM 2009) as pFabric's simulations draw
# them (the authors' CDF_datamining.txt table, in 1460-byte packets; shared/spec/
# rdma-scheduling-params.md §8.1): here in bytes, packets x 1460. Half the flows are one
# packet (a point mass, the first two lines), then linear between points; the largest is
# 666,667 packets (973 MB). Mean 5,116.6 packets = 7,470,236 B (closed form by hand).
# The tables give packets: set `size_quantum_bytes = 1460` for flows in whole packets.
size_bytes cumulative_fraction
1460 0
1460 0.5
2920 0.6
4380 0.7
10220 0.8
389820 0.9
3076220 0.95
97333820 0.99
973333820 1.0
