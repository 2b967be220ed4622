# Reference values of sdcMicro 5.8.1's suda2 for tests/test_suda2.py (issue 29).
# Rscript tests/data/suda2_sdcmicro.R  (from /work/main; sdcMicro in /tmp/sdcmicro/Rlib)
.libPaths(c("/tmp/sdcmicro/Rlib", .libPaths())); suppressMessages(library(sdcMicro))
g <- function(x) ifelse(is.na(x), "NA", sprintf("%.17g", x))
run <- function(data, vars, ...) suppressWarnings(suda2(data[, vars, drop = FALSE], variables = vars, ...))
attrs <- NULL
keep_attr <- function(case, su) {
  attrs <<- rbind(attrs, data.frame(case = case, variable = su$attribute_contributions$variable,
                                    contribution = g(su$attribute_contributions$contribution)))
}
data(testdata); data(testdata2)
# testdata: 4 keys (defaults) and 9 keys (DisFraction = 0.05, original_scores = FALSE)
k4 <- c("urbrur", "water", "sex", "age")
k9 <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil")
s4 <- run(testdata, k4)
s9 <- run(testdata, k9, DisFraction = 0.05, original_scores = FALSE)
keep_attr("testdata4", s4); keep_attr("testdata9", s9)
c4 <- as.matrix(s4$contributionPercent)
td <- data.frame(testdata[, k9], score4 = g(s4$score), dis4 = g(s4$disScore),
                 score9 = g(s9$score), dis9 = g(s9$disScore))
for (j in seq_along(k4)) td[[paste0("c4_", k4[j])]] <- g(c4[, j])
write.csv(td, "tests/data/suda2_sdcmicro_testdata.csv", row.names = FALSE, quote = FALSE)
# own files: testdata2 with correlated keys (water2, water3 recode water; relat2 relat),
# and a synthetic file with missing values and an item correlated with another
kc <- c("urbrur", "water", "water2", "water3", "relat", "relat2", "sex", "hhcivil")
set.seed(29)
n <- 400
syn <- data.frame(a = sample(1:3, n, TRUE), b = sample(1:5, n, TRUE, prob = c(.5, .2, .15, .1, .05)),
                  c = sample(0:1, n, TRUE), d = sample(1:8, n, TRUE), e = sample(1:4, n, TRUE))
syn$f <- ifelse(syn$b == 5, 9L, syn$a)   # f == 9 is held by the records with b == 5
for (v in c("a", "d", "e")) syn[[v]][sample(n, 20)] <- NA
own <- list(corr = list(testdata2, kc, list()), syn = list(syn, names(syn), list(DisFraction = 0.02)),
            syn2 = list(syn, c("b", "d"), list()))
for (case in names(own)) {
  o <- own[[case]]
  su <- do.call(run, c(list(o[[1]], o[[2]]), o[[3]]))
  keep_attr(case, su)
  cp <- as.matrix(su$contributionPercent)
  out <- data.frame(o[[1]][, o[[2]]], score = g(su$score), dis = g(su$disScore))
  for (j in seq_along(o[[2]])) out[[paste0("c_", o[[2]][j])]] <- g(cp[, j])
  write.csv(out, sprintf("tests/data/suda2_sdcmicro_%s.csv", case), row.names = FALSE, quote = FALSE)
}
write.csv(attrs, "tests/data/suda2_sdcmicro_attributes.csv", row.names = FALSE, quote = FALSE)
# sdcMicro's tests/testthat/test_suda2.R (commented out there): the values asserted
sdc <- createSdcObj(testdata2, keyVars = c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex"),
                    numVars = c("expend", "income", "savings"), w = "sampling_weight")
cat("testdata2 7 keys score[1]: original=FALSE", suda2(sdc, original_scores = FALSE)@risk$suda2$score[1],
    "original=TRUE", suda2(sdc, original_scores = TRUE)@risk$suda2$score[1], "\n")
cat("testdata2 5 keys score[1]:", suda2(testdata2, variables = c("urbrur", "roof", "walls", "water", "sex"))$score[1], "\n")
set.seed(3)
sample_Data <- runif(30, 1, 100)
sample_Data <- array(sample_Data, dim = c(10, 3))
sample_Data <- cbind(sample_Data, round(runif(10, 1, 4), digits = 0))
sample_Data <- cbind(sample_Data, round(runif(10, 1, 6), digits = 0))
sample_Data <- cbind(sample_Data, round(runif(10, 1, 3), digits = 0))
cat("set.seed(3) keys Var4, Var5, Var6:\n"); print(sample_Data[, 4:6])
sample_Data <- as.data.frame(sample_Data)
colnames(sample_Data) <- c("Var1", "Var2", "Var3", "Var4", "Var5", "Var6")
for (v in 4:6) sample_Data[, v] <- as.factor(as.numeric(sample_Data[, v]))
sdc <- createSdcObj(sample_Data, keyVars = c("Var4", "Var5", "Var6"), numVars = c("Var1", "Var2", "Var3"))
su <- suda2(sdc)@risk$suda2
cat("score", su$score, "\ncontribution Var4", su$contributionPercent[, 1], "\ndis", g(su$disScore), "\n")
