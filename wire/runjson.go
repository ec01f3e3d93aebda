package wire

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends r as encoding/json's Marshal writes it, byte for byte
// (TestRunRequestAppendJSON and FuzzRunRequestAppendJSON hold it to that),
// without Marshal's reflection: the CLI sends one RunRequest per call and
// building encoding/json's encoder for the type cost more than the rest of
// the encoding (docs/performance.md, "A cheaper `ducc run --detach`").
// A field added to RunRequest must be added here too; the test fails until
// it is.
func (r RunRequest) AppendJSON(b []byte) []byte {
	b = append(b, `{"memory":`...)
	b = strconv.AppendInt(b, r.Memory, 10)
	if r.Class != "" {
		b = appendJSONField(b, "class", r.Class)
	}
	b = appendJSONField(b, "path", r.Path)
	b = appendJSONStrings(b, "args", r.Args)
	b = appendJSONStrings(b, "env", r.Env)
	if r.Dir != "" {
		b = appendJSONField(b, "dir", r.Dir)
	}
	if r.LogDir != "" {
		b = appendJSONField(b, "log_dir", r.LogDir)
	}
	if r.Description != "" {
		b = appendJSONField(b, "description", r.Description)
	}
	b = appendJSONStrings(b, "machine_list", r.MachineList)
	if r.Umask != "" {
		b = appendJSONField(b, "umask", r.Umask)
	}
	if r.ShareGroup != "" {
		b = appendJSONField(b, "share_with_group", r.ShareGroup)
	}
	if r.ShareGID != 0 {
		b = append(b, `,"share_gid":`...)
		b = strconv.AppendUint(b, uint64(r.ShareGID), 10)
	}
	if r.GPUs != 0 {
		b = append(b, `,"process_gpus":`...)
		b = strconv.AppendInt(b, int64(r.GPUs), 10)
	}
	if r.GPUMemory != 0 {
		b = append(b, `,"process_gpu_memory":`...)
		b = strconv.AppendInt(b, r.GPUMemory, 10)
	}
	if r.GPUModel != "" {
		b = appendJSONField(b, "process_gpu_model", r.GPUModel)
	}
	return append(b, '}')
}

// appendJSONField appends `,"name":"value"`; name needs no escaping.
func appendJSONField(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

// appendJSONStrings appends `,"name":[...]` unless v is empty (omitempty).
func appendJSONStrings(b []byte, name string, v []string) []byte {
	if len(v) == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':', '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONString appends s quoted as encoding/json's Marshal quotes it:
// HTML's <, > and & escaped, \b \f \n \r \t short, other control bytes as
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
