# fold.awk - folds `perf script` output into "comm;root;...;leaf COUNT" lines, the form flamectl prints.
# A sample is a header line ("comm  tid [cpu] time: period event:") and then its frames, leaf first, one
# per line ("\t addr symbol+0xoff (dso)"), ending at a blank line. Kernel frames get "_[k]"; ';' in a
# name becomes ':' so that it cannot split a frame.

function emit(   stack, i) {
	if (!open)
		return
	stack = comm
	for (i = nframes - 1; i >= 0; i--)
		stack = stack ";" frames[i]
	counts[stack]++
	open = 0
}

/^[^ \t]/ {
	emit()
	if (match($0, /[ \t]+[0-9]+(\/[0-9]+)?[ \t]+\[[0-9]+\]/))
		comm = substr($0, 1, RSTART - 1)
	else
		comm = $1
	sub(/^[ \t]+/, "", comm)
	gsub(/;/, ":", comm)
	nframes = 0
	open = 1
	next
}

/^[ \t]+[0-9a-f]+ / {
	name = $0
	sub(/^[ \t]+[0-9a-f]+ /, "", name)
	dso = ""
	if (match(name, / \([^()]*\)$/)) {
		dso = substr(name, RSTART + 2, RLENGTH - 3)
		name = substr(name, 1, RSTART - 1)
	}
	sub(/\+0x[0-9a-f]+$/, "", name)
	gsub(/;/, ":", name)
	if (dso ~ /^\[kernel\./)
		name = name "_[k]"
	frames[nframes++] = name
	next
}

/^[ \t]*$/ { emit() }

END {
	emit()
	for (s in counts)
		print s, counts[s]
}
