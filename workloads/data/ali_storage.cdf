# Alibaba storage flow sizes: HPCC artifact (Li et al., SIGCOMM 2019).
# Source: the published figures named above. Sampling interpolates linearly.
size_bytes cumulative_fraction
0 0
4000 0.2293
8000 0.6921
16000 0.8061
32000 0.9047
64000 0.9353
128000 0.9677
256000 0.9753
2000000 1
