# Data center flow sizes of Benson, Akella and Maltz, "Network traffic characteristics of data
# centers in the wild" (IMC 2010), as the pFabric/pHost authors' simulator tabulates them
# (`CDF_aditya.txt`, labelled "IMC10"; shared/spec/rdma-scheduling-params.md §8.1), in
# 1460-byte packets, here in bytes (packets x 1460). A STEP CDF: each size appears twice, a point
# mass, as ns-2's EmpiricalRandomVariable draws a table by default (`interpolation_ 0`): the UPS
# experiments ([TH] Ch. 5, sizes from [15], Benson IMC) drew only these eleven sizes, 1 to 2,107
# packets, and their analysis scripts bucket exactly them (1 packet, 2-7, 40-267, 1,187 and
# 2,107 packets). Half the flows are one packet and 15% are above 200 KB (137 packets), as [TH]
# §4.3.1 describes [15]. Mean 184.475 packets = 269,333.5 B (closed form by hand).
size_bytes cumulative_fraction
1460 0.0
1460 0.5
2920 0.5
2920 0.6
4380 0.6
4380 0.7
7300 0.7
7300 0.75
10220 0.75
10220 0.8
58400 0.8
58400 0.8125
105120 0.8125
105120 0.825
200020 0.825
200020 0.85
389820 0.85
389820 0.9
1733020 0.9
1733020 0.95
3076220 0.95
3076220 1.0
