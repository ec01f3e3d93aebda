package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// table is text in columns that fits a width. When the natural widths do
// not fit, columns give way one step at a time, in the order of their
// steps (1 first): a shrinkable column is cut down to minShrunk (its cells
// cut with "…"), a droppable one is left out. Columns with neither never
// change: ids and states are shown whole. What still does not fit is cut
// at the line's end.
type table struct {
	heads  []string
	shrink []int // 0: never cut; else its step
	drop   []int // 0 (or missing): never left out; else its step
	rows   [][]string
	indent string
}

// minShrunk is the narrowest a shrinkable column is cut to.
const minShrunk = 6

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table; width 0 means no limit. It returns the heads
// of the columns it left out to fit.
func (t *table) write(w io.Writer, width int, header bool) (dropped []string, err error) {
	n := len(t.heads)
	widths := make([]int, n)
	gone := make([]bool, n)
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
		s, cols := utf8.RuneCountInString(t.indent), 0
		for i, wd := range widths {
			if !gone[i] {
				s += wd
				cols++
			}
		}
		return s + gap*max(cols-1, 0)
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
		// Then the steps, in order.
		type step struct{ order, col int }
		var steps []step
		for i := range widths {
			if t.shrink[i] > 0 {
				steps = append(steps, step{t.shrink[i], i})
			}
			if i < len(t.drop) && t.drop[i] > 0 {
				steps = append(steps, step{t.drop[i], -1 - i})
			}
		}
		slices.SortStableFunc(steps, func(a, b step) int { return a.order - b.order })
		for _, st := range steps {
			over := total() - width
			if over <= 0 {
				break
			}
			if st.col >= 0 {
				if !gone[st.col] && widths[st.col] > minShrunk {
					widths[st.col] = max(minShrunk, widths[st.col]-over)
				}
				continue
			}
			i := -1 - st.col
			gone[i] = true
			dropped = append(dropped, t.heads[i])
		}
	}
	var b strings.Builder
	for _, r := range all {
		b.Reset()
		b.WriteString(t.indent)
		last := n - 1
		for last > 0 && gone[last] {
			last--
		}
		for i := 0; i < n; i++ {
			if gone[i] {
				continue
			}
			cell := ""
			if i < len(r) {
				cell = clip(r[i], widths[i])
			}
			b.WriteString(cell)
			if i < last {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+gap))
			}
		}
		line := strings.TrimRight(b.String(), " ")
		if width > 0 {
			line = clip(line, width)
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return dropped, err
		}
	}
	return dropped, nil
}

// leftOut says on w which columns a table left out to fit width, and how
// to see them.
func leftOut(w io.Writer, dropped []string, width int) {
	if len(dropped) > 0 {
		printErr(w, fmt.Sprintf("left out to fit %d columns: %s (--wide shows every column)", width, strings.Join(dropped, ", ")))
	}
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
