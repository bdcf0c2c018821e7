import re, sys
p = sys.argv[1]
s = open(p).read()
# the slices-ahead of before: stages - 1 for the TF32 tiles
s = re.sub(r"for \(int kt = 0; kt < (\d) && kt < KT_; \+\+kt\) ISSUE_\(kt\)",
           lambda m: "for (int kt = 0; kt < %d && kt < KT_; ++kt) ISSUE_(kt)" % (int(m.group(1)) - 1), s)
s = re.sub(r"if \(tid == 0 && kt \+ (\d) < KT_\) \{\n            ISSUE_\(kt \+ \d\)",
           lambda m: "if (tid == 0 && kt + %d < KT_) {\n            ISSUE_(kt + %d)" % (int(m.group(1)) - 1, int(m.group(1)) - 1), s)
open(p, "w").write(s)
