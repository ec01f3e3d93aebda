package cli

import (
	"io"
	"strings"
	"unicode/utf8"
)

// table is text in columns that fits a width: when the natural widths do
// not fit, the shrinkable columns give way one after the other, in their
// order (1 first), down to minShrunk, and their cells are cut with "…";
// what still does not fit is cut at the line's end.
type table struct {
	heads  []string
	shrink []int // 0: never cut; else the order in which columns are cut
	rows   [][]string
	indent string
}

// minShrunk is the narrowest a shrinkable column is cut to.
const minShrunk = 6

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table; width 0 means no limit.
func (t *table) write(w io.Writer, width int, header bool) error {
	n := len(t.heads)
	widths := make([]int, n)
	var all [][]string
	if header {
		all = append(all, t.heads)
	}
	all = append(all, t.rows...)
	for _, r := range all {
		for i := 0; i < n && i < len(r); i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	const gap = 2
	total := func() int {
		s := utf8.RuneCountInString(t.indent)
		for i, wd := range widths {
			s += wd
			if i < n-1 {
				s += gap
			}
		}
		return s
	}
	if width > 0 && total() > width {
		// Headers wider than their cells give way first.
		for i := range widths {
			if t.shrink[i] == 0 || !header {
				continue
			}
			cells := 0
			for _, r := range t.rows {
				if i < len(r) {
					cells = max(cells, utf8.RuneCountInString(r[i]))
				}
			}
			if over := total() - width; over > 0 && widths[i] > max(cells, minShrunk) {
				widths[i] = max(cells, minShrunk, widths[i]-over)
			}
		}
		for total() > width {
			best := -1
			for i := range widths {
				if t.shrink[i] > 0 && widths[i] > minShrunk && (best < 0 || t.shrink[i] < t.shrink[best]) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			widths[best] = max(minShrunk, widths[best]-(total()-width))
		}
	}
	var b strings.Builder
	for _, r := range all {
		b.Reset()
		b.WriteString(t.indent)
		for i := 0; i < n; i++ {
			cell := ""
			if i < len(r) {
				cell = clip(r[i], widths[i])
			}
			b.WriteString(cell)
			if i < n-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+gap))
			}
		}
		line := strings.TrimRight(b.String(), " ")
		if width > 0 {
			line = clip(line, width)
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// wrap breaks s into lines of at most width runes at spaces; a word longer
// than a line is cut across lines. width 0 means no limit.
func wrap(s string, width int) []string {
	if width <= 0 {
		return []string{s}
	}
	if strings.Contains(s, "\n") {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			out = append(out, wrap(l, width)...)
		}
		return out
	}
	if utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			r := []rune(word)
			lines = append(lines, string(r[:width]))
			word = string(r[width:])
		}
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// fields prints "Label:  value" lines with the values in one column,
// wrapped to width (0: no limit) with their continuation lines indented.
type fields struct {
	labels []string
	values []string
}

func (f *fields) add(label, value string) {
	f.labels = append(f.labels, label+":")
	f.values = append(f.values, value)
}

func (f *fields) write(w io.Writer, width int) error {
	lw := 0
	for _, l := range f.labels {
		lw = max(lw, utf8.RuneCountInString(l))
	}
	lw += 2
	vw := 0
	if width > 0 {
		vw = max(width-lw, 20)
	}
	pad := strings.Repeat(" ", lw)
	for i, l := range f.labels {
		for j, line := range wrap(f.values[i], vw) {
			head := pad
			if j == 0 {
				head = l + strings.Repeat(" ", lw-utf8.RuneCountInString(l))
			}
			if _, err := io.WriteString(w, strings.TrimRight(head+line, " ")+"\n"); err != nil {
				return err
			}
		}
	}
	return nil
}
