package spec

import (
	"fmt"
	"strings"
	"unicode"
)

// MaxGPUModel bounds a process_gpu_model value, in bytes.
const MaxGPUModel = 128

// CheckGPUModel normalizes and checks a GPU model name (process_gpu_model):
// surrounding blanks are dropped; it must be a printable line of at most
// MaxGPUModel bytes. Whether a node has such GPUs is for the head to say.
func CheckGPUModel(s string) (string, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return "", fmt.Errorf("empty GPU model: write the model as 'ducc nodes' names it, e.g. %q", "NVIDIA H100 80GB HBM3")
	}
	if len(t) > MaxGPUModel {
		return "", fmt.Errorf("GPU model of %d bytes: at most %d", len(t), MaxGPUModel)
	}
	if strings.IndexFunc(t, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return "", fmt.Errorf("GPU model %q has control characters: write the model as 'ducc nodes' names it", s)
	}
	return t, nil
}

// checkGPU checks a GPU request as a whole: whole GPUs or a slice of one
// GPU's memory, not both, and a model only with one of them (a
// reservation has no slices: gpuMem is 0). name says how the message
// names a key: the flag typed or the key.
func checkGPU(kind Kind, gpus int, gpuMem int64, model string, name func(key string) string) error {
	if gpus > 0 && gpuMem > 0 {
		return fmt.Errorf("%s and %s are both given: ask for whole GPUs or a slice of one GPU's memory, not both",
			name("process_gpus"), name("process_gpu_memory"))
	}
	if model != "" && gpus == 0 && gpuMem == 0 {
		if kind == KindReserve {
			return fmt.Errorf("%s needs %s: say how many GPUs of that model the machine must have",
				name("process_gpu_model"), name("process_gpus"))
		}
		return fmt.Errorf("%s needs %s or %s: say how many GPUs of that model (or how much of one GPU's memory)",
			name("process_gpu_model"), name("process_gpus"), name("process_gpu_memory"))
	}
	return nil
}

// keyName names a key by itself (a request as it reaches the head).
func keyName(key string) string { return key }

// rawName names a key as raw has it: the flag typed on the command line,
// else the key.
func rawName(kind Kind, raw Raw) func(string) string {
	return func(key string) string {
		if v, ok := raw[key]; ok && isFlag(v.At) {
			return v.At
		}
		if k, ok := lookup(kind, key); ok {
			if f := k.Flag(kind); f != "" && len(raw) > 0 && allFlags(raw) {
				return "--" + f
			}
		}
		return key
	}
}

// allFlags reports whether every value of raw came from a flag.
func allFlags(raw Raw) bool {
	for _, v := range raw {
		if !isFlag(v.At) {
			return false
		}
	}
	return true
}
