# Web search flow sizes: DCTCP paper (Alizadeh et al., SIGCOMM 2010), as tabulated in the HPCC artifact.
# Source: the published figures named above. Sampling interpolates linearly.
size_bytes cumulative_fraction
0 0
10000 0.15
20000 0.2
30000 0.3
50000 0.4
80000 0.53
200000 0.6
1000000 0.7
2000000 0.8
5000000 0.9
10000000 0.97
30000000 1
