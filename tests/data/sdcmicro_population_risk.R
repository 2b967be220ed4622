# Reference values of sdcMicro 5.8.1 for tests/test_population_risk.py (issue 29).
# Rscript tests/data/sdcmicro_population_risk.R  (from /work/main)
.libPaths(c("/tmp/sdcmicro/Rlib", .libPaths())); suppressMessages(library(sdcMicro))
data(testdata)
kv <- c("urbrur", "water", "sex", "age")
m <- measure_risk(testdata, keyVars=kv, w="sampling_weight", hid="ori_hid")
ex <- indivRisk(freqCalc(testdata, keyVars=kv, w="sampling_weight"), method="exact")
g13 <- function(x) ifelse(is.na(x), "", sprintf("%.13g", x))
# per record: fk (all weights are 100, so Fk = 100 fk and the risks depend on fk only)
by_fk <- unique(data.frame(fk=m$Res[, "fk"], Fk=m$Res[, "Fk"], risk=g13(m$Res[, "risk"]),
                           risk_exact=g13(ex$rk)))
by_fk <- by_fk[order(by_fk$fk), ]
by_hh <- unique(data.frame(ori_hid=testdata$ori_hid, hier_risk=g13(m$Res[, "hier_risk"])))
stopifnot(!any(duplicated(by_fk$fk)), !any(duplicated(by_hh$ori_hid)))
write.csv(by_fk, "tests/data/sdcmicro_testdata_risk_by_fk.csv", row.names=FALSE, quote=FALSE)
write.csv(by_hh, "tests/data/sdcmicro_testdata_hier_risk.csv", row.names=FALSE, quote=FALSE)
out <- data.frame(fk=m$Res[, "fk"])
con <- file("tests/data/sdcmicro_testdata_risk.csv", "w")
writeLines(sprintf("# sdcMicro 5.8.1: measure_risk(testdata, keyVars=c('urbrur','water','sex','age'), w='sampling_weight', hid='ori_hid'): global_risk=%.17g global_risk_ER=%.17g hier_risk_ER=%.17g hier_risk=%.17g; risk_exact = indivRisk(freqCalc(testdata, keyVars=kv, w='sampling_weight'), method='exact')$rk; made by tests/data/sdcmicro_population_risk.R",
                   m$global_risk, m$global_risk_ER, m$hier_risk_ER, m$hier_risk), con)
write.csv(out, con, row.names=FALSE, quote=FALSE)
close(con)

# own data: 3 keys with missing values, varied weights, households
set.seed(29)
n <- 300
d <- data.frame(a=sample(1:3, n, TRUE), b=sample(1:4, n, TRUE), c=sample(1:2, n, TRUE),
                w=round(runif(n, 1, 60), 2), hid=sort(sample(1:120, n, TRUE)))
d$a[sample(n, 25)] <- NA; d$b[sample(n, 20)] <- NA; d$c[sample(n, 15)] <- NA
d[c(7, 101), c("a", "b", "c")] <- NA      # two records missing in every key
f1 <- freqCalc(d, keyVars=1:3, w=4, alpha=1)
f5 <- freqCalc(d, keyVars=1:3, w=4, alpha=0.5)
fu <- freqCalc(d, keyVars=1:3, alpha=1)
r1 <- indivRisk(f1, method="approx"); r1x <- indivRisk(f1, method="exact")
r5 <- indivRisk(f5, method="approx")
mr <- measure_risk(d, keyVars=c("a", "b", "c"), w="w", hid="hid")
out2 <- data.frame(d, fk=f1$fk, Fk=g13(f1$Fk), fk_a05=f5$fk, Fk_a05=g13(f5$Fk),
                   fk_unw=fu$fk, risk=g13(r1$rk), risk_exact=g13(r1x$rk),
                   risk_a05=g13(r5$rk), hier_risk=g13(mr$Res[, "hier_risk"]))
con <- file("tests/data/sdcmicro_population_risk_random.csv", "w")
writeLines(sprintf("# sdcMicro 5.8.1 on random data with missing keys (made by tests/data/sdcmicro_population_risk.R): freqCalc(d, keyVars=1:3, w=4, alpha=1 / 0.5), indivRisk(method='approx'/'exact'), measure_risk(d, keyVars=c('a','b','c'), w='w', hid='hid'): global_risk_ER=%.17g hier_risk_ER=%.17g",
                   mr$global_risk_ER, mr$hier_risk_ER), con)
write.csv(out2, con, row.names=FALSE, quote=FALSE, na="")
close(con)
