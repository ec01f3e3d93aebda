// Package units reads and writes the sizes and durations that users type
// and read: memory sizes the DUCC way ("4G", "512M", "1.5GiB", a bare
// number is GiB), durations ("90s", "2h"), the minutes and milliseconds of
// DUCC spec keys, and their compact human forms ("4 GiB", "3m05s"); and
// counts of things in words ("1 error", "3 processes", Plural).
//
// It is the one parser and the one formatter for these; the CLI, the
// agent, the head, the scheduler's config and the web pages all use it.
// It has no state and imports nothing of ducc.
package units
