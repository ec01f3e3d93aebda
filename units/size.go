package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Byte multiples. DUCC reads G, GB and GiB alike as powers of two.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// ParseSize reads a memory size written the DUCC way: "4G", "512M", "4GiB",
// "1.5G", "2T", "100K", "64B" or a bare number, which means GiB. Units are
// case-insensitive and always binary (G = GB = GiB = 2^30 bytes).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty memory size; write it like 4G, 512M or 1.5GiB")
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("memory size %q does not start with a number; write it like 4G, 512M or 1.5GiB", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("memory size %q: bad number %q", s, num)
	}
	var mult int64
	switch unit {
	case "":
		mult = GiB
	case "b":
		mult = 1
	case "k", "kb", "kib":
		mult = KiB
	case "m", "mb", "mib":
		mult = MiB
	case "g", "gb", "gib":
		mult = GiB
	case "t", "tb", "tib":
		mult = TiB
	default:
		return 0, fmt.Errorf("memory size %q: unknown unit %q; use K, M, G or T (optionally followed by B or iB)", s, t[i:])
	}
	b := v * float64(mult)
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("memory size %q is too large", s)
	}
	return int64(math.Round(b)), nil
}

// FormatSize writes a byte count for humans: "4 GiB", "512 MiB", "1.5 GiB".
func FormatSize(b int64) string {
	if b < 0 {
		return "-" + FormatSize(-b)
	}
	units := []struct {
		n    string
		size int64
	}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}
	for _, u := range units {
		if b >= u.size {
			if b%u.size == 0 {
				return strconv.FormatInt(b/u.size, 10) + " " + u.n
			}
			v := float64(b) / float64(u.size)
			s := strconv.FormatFloat(v, 'f', 1, 64)
			s = strings.TrimSuffix(s, ".0")
			return s + " " + u.n
		}
	}
	return strconv.FormatInt(b, 10) + " B"
}

// Size is a memory size in bytes that reads from YAML as a DUCC size string
// ("4G") or a bare number of GiB.
type Size int64

// Bytes returns the size in bytes.
func (s Size) Bytes() int64 { return int64(s) }

// String formats the size for humans.
func (s Size) String() string { return FormatSize(int64(s)) }

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a memory size must be a single value like 4G", n.Line)
	}
	b, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = Size(b)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (s Size) MarshalYAML() (any, error) {
	return strings.ReplaceAll(FormatSize(int64(s)), " ", ""), nil
}
