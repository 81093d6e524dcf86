# Goodput vs credit window for pcie_credit. Called by the test (tb/pcie_credit.c):
#   gnuplot -e "datafile='reports/pcie_credit.dat'; outfile='reports/pcie_credit.png'; \
#               linkrate=57.2; loopns=900; title_text='...'" scripts/plot_pcie_credit.gp
# or by scripts/plot_pcie_credit.sh from an existing data file.
if (!exists("datafile")) datafile = 'reports/pcie_credit.dat'
if (!exists("outfile")) outfile = 'reports/pcie_credit.png'
if (!exists("title_text")) title_text = ''
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title sprintf("PCIe credit flow control: MWr goodput vs posted credit window (%s)", title_text) noenhanced
set xlabel "credit window (KB of MWr payload = min(PH, PD/(MPS/16)) x MPS)"
set ylabel "goodput (GB/s)"
set grid
set key bottom right
set yrange [0:linkrate*1.2]
if (exists("xmax")) set xrange [0:xmax]; else xmax = 1e9
clip(x) = x < xmax * 0.97 ? x : xmax * 0.97
line(x) = (x / loopns < linkrate) ? x / loopns : linkrate
# window bytes / loop (ns) = GB/s
plot line(x * 1024) with lines lw 2 lc rgb "#888888" title sprintf("window / credit loop (%.0f ns), capped at link rate", loopns), \
     datafile index 0 using ($3/1024):4 with linespoints pt 7 ps 1.2 lc rgb "#1f77b4" title "measured, PD swept (PH ample)", \
     datafile index 1 using ($3/1024):4 with linespoints pt 5 ps 1.0 lc rgb "#2ca02c" title "measured, PH swept (PD infinite)", \
     datafile index 0 using ($3/1024):5 with points pt 2 ps 1.0 lc rgb "#d62728" title "window / measured loop of each point", \
     datafile index 2 every ::0::0 using (clip($3/1024)):4:(sprintf("  unscaled max: %u PH / %u PD, %.1f GB/s", $7, $8, $4)) \
        with labels left point pt 9 ps 1.6 lc rgb "#ff7f0e" offset 0.5,0 noenhanced notitle, \
     datafile index 2 every ::1::1 using (clip($3/1024)):4:(sprintf("Scaled FC: %u PH / %u PD, %.1f GB/s (window %.0f KB)", $7, $8, $4, $3/1024)) \
        with labels right point pt 9 ps 1.6 lc rgb "#ff7f0e" offset -0.5,1.2 noenhanced notitle
