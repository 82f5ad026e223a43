# Facebook web flow sizes as the NDP authors' public htsim harness draws them for [P] Fig. 23
# (NDP V25): ten equally likely sizes from 250 B to 1 MB, mean 112,225 B. Their source is
# Roy et al., SIGCOMM 2015, Fig. 6a (the paper's [34]); copied from
# shared/data/flow-size-cdfs/fb-web-ndp-htsim.txt. A STEP CDF: each size appears twice, a
# point mass; the flat stretches between sizes are never sampled (interpolated instead of
# stepped, the mean would fall to about 62 KB).
size_bytes cumulative_percent
0 0
250 0
250 10
500 10
500 20
1000 20
1000 30
1500 30
1500 40
2000 40
2000 50
3000 50
3000 60
4000 60
4000 70
10000 70
10000 80
100000 80
100000 90
1000000 90
1000000 100
