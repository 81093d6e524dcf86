# Goodput vs VL buffer for ib_credit. Called by the test (tb/ib_credit.c):
#   gnuplot -e "datafile='reports/ib_credit.dat'; outfile='reports/ib_credit.png'; \
#               rate=49.7; loopns=283; xmax=70; title_text='...'" scripts/plot_ib_credit.gp
if (!exists("datafile")) datafile = 'reports/ib_credit.dat'
if (!exists("outfile")) outfile = 'reports/ib_credit.png'
if (!exists("title_text")) title_text = ''
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title sprintf("InfiniBand per-VL credits: goodput vs VL buffer (%s)", title_text) noenhanced
set xlabel "VL receive buffer (KB)"
set ylabel "goodput (GB/s)"
set grid
set key bottom right
set yrange [0:rate*1.2]
if (exists("xmax")) set xrange [0:xmax]
line(x) = (x / loopns < rate) ? x / loopns : rate
set samples 500
# columns: buffer_bytes window_pkts goodput predicted upper stall_ns fc_packets
plot line(x * 1024) with lines lw 1 dt 2 lc rgb "#888888" title sprintf("buffer / credit loop (%.0f ns), capped at the rate", loopns), \
     datafile using ($1/1024):4 with linespoints lw 2 pt 6 ps 1.4 lc rgb "#d62728" title "predicted: whole packets / credit loop", \
     datafile using ($1/1024):3 with points pt 7 ps 1.1 lc rgb "#1f77b4" title "measured"
