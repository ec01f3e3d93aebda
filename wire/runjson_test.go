package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// checkAppendJSON fails unless r.AppendJSON writes what json.Marshal does.
func checkAppendJSON(t *testing.T, r RunRequest) {
	t.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := r.AppendJSON(nil)
	if !bytes.Equal(got, want) {
		t.Errorf("AppendJSON of %#v:\n got %s\nwant %s", r, got, want)
	}
}

// filled is a RunRequest with every field set to a value that is not its
// zero, found by reflection: a field added to RunRequest and not to
// AppendJSON fails TestRunRequestAppendJSON.
func filled(t *testing.T, s string, n int64) RunRequest {
	var r RunRequest
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(s + v.Type().Field(i).Name)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{s, "", v.Type().Field(i).Name}))
		case reflect.Int, reflect.Int64:
			f.SetInt(n)
		case reflect.Uint32:
			f.SetUint(uint64(n) & 0xffffffff)
		default:
			t.Fatalf("RunRequest.%s is a %s: teach AppendJSON and this test about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	return r
}

func TestRunRequestAppendJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    RunRequest
	}{
		{"zero", RunRequest{}},
		{"typical", RunRequest{Path: "true", Env: []string{"HOME=/root", "PATH=/usr/bin:/bin"}, Dir: "/tmp", Umask: "0022"}},
		{"empty slices", RunRequest{Args: []string{}, Env: []string{}, MachineList: []string{}}},
		{"slices of empty strings", RunRequest{Args: []string{""}, Env: []string{"", ""}}},
		{"every field", filled(t, "x", 7)},
		{"every field, negative", filled(t, "y", -3)},
		{"every field, large", filled(t, "z", 1<<62)},
		{"escapes", RunRequest{Path: "a\"b\\c\n\r\t\b\f\x00\x01\x1f\x7f <tag> & done", Args: []string{"é", "日本", "\u2028\u2029", "\xff\xfe", "a\xc3", "\U0001F600", "\xed\xa0\x80"}}},
		{"html", RunRequest{Description: "<script>&amp;</script>", GPUModel: "NVIDIA H100 80GB HBM3"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkAppendJSON(t, tc.r) })
	}
}

func FuzzRunRequestAppendJSON(f *testing.F) {
	f.Add("true", "a\x00<>&\u2028\xff", int64(0), uint32(0), 0)
	f.Add("", "", int64(-1), uint32(1<<31), -5)
	f.Fuzz(func(t *testing.T, s1, s2 string, n int64, u uint32, i int) {
		checkAppendJSON(t, RunRequest{
			Memory: n, Class: s2, Path: s1, Args: []string{s2, s1}, Env: []string{s1},
			Dir: s2, LogDir: s1, Description: s2, MachineList: []string{s1, s2},
			Umask: s1, ShareGroup: s2, ShareGID: u, GPUs: i, GPUMemory: n, GPUModel: s1,
		})
	})
}
