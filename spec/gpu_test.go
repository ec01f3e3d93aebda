package spec

import (
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// gpuReq is what a GPU request builds to, whatever the kind.
type gpuReq struct {
	GPUs   int
	Memory int64
	Model  string
}

// buildGPU builds raw as kind and returns its GPU request.
func buildGPU(kind Kind, raw Raw) (gpuReq, error) {
	switch kind {
	case KindJob:
		if _, ok := raw["process_executable"]; !ok {
			raw["process_executable"] = Value{S: "w", At: "--process-executable"}
		}
		j, err := BuildJob(raw, "/")
		if err != nil {
			return gpuReq{}, err
		}
		return gpuReq{j.Spec.GPUs, j.Spec.GPUMemory, j.Spec.GPUModel}, nil
	case KindService:
		s, _, err := BuildService(raw)
		return gpuReq{s.GPUs, s.GPUMemory, s.GPUModel}, err
	case KindRun:
		r, err := BuildRun(raw)
		return gpuReq{r.Req.GPUs, r.Req.GPUMemory, r.Req.GPUModel}, err
	case KindReserve:
		if _, ok := raw["process_memory_size"]; !ok {
			raw["process_memory_size"] = Value{S: "64G", At: "--memory"}
		}
		r, err := BuildReserve(raw)
		return gpuReq{r.Req.GPUs, 0, r.Req.GPUModel}, err
	}
	return gpuReq{}, nil
}

// TestGPUFlags: --gpus, --gpu-memory and --gpu-model on every command
// that takes them, and the errors, naming the flags typed.
func TestGPUFlags(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	for _, tc := range []struct {
		name string
		kind Kind
		args []string
		want gpuReq
		err  string // "" = valid
	}{
		{"submit gpus", KindJob, []string{"--gpus", "2", "--gpu-model", " " + h100 + " "}, gpuReq{2, 0, h100}, ""},
		{"submit slice", KindJob, []string{"--gpu-memory", "20G"}, gpuReq{0, 20 << 30, ""}, ""},
		{"submit DUCC-style name", KindJob, []string{"--process-gpus", "1"}, gpuReq{1, 0, ""}, ""},
		{"submit zero", KindJob, []string{"--gpus", "0"}, gpuReq{}, ""},
		{"register gpus", KindService, []string{"--service-request-endpoint", "TCP:h:1", "--gpus", "1"}, gpuReq{1, 0, ""}, ""},
		{"register slice", KindService, []string{"--service-request-endpoint", "TCP:h:1", "--gpu-memory", "512M", "--gpu-model", "A100"}, gpuReq{0, 512 << 20, "A100"}, ""},
		{"run gpus", KindRun, []string{"--gpus", "1"}, gpuReq{1, 0, ""}, ""},
		{"run slice", KindRun, []string{"--gpu-memory", "40GiB", "--gpu-model", h100}, gpuReq{0, 40 << 30, h100}, ""},
		{"reserve gpus", KindReserve, []string{"--gpus", "8", "--gpu-model", h100}, gpuReq{8, 0, h100}, ""},

		{"negative", KindRun, []string{"--gpus", "-1"}, gpuReq{}, "--gpus: must not be negative, got -1"},
		{"not a number", KindJob, []string{"--gpus", "two"}, gpuReq{}, `--gpus: "two" is not a whole number`},
		{"reserve negative", KindReserve, []string{"--gpus", "-2"}, gpuReq{}, "--gpus: must not be negative, got -2"},
		{"both", KindRun, []string{"--gpus", "1", "--gpu-memory", "20G"}, gpuReq{}, "--gpus and --gpu-memory are both given: ask for whole GPUs or a slice of one GPU's memory, not both"},
		{"both, job", KindJob, []string{"--gpus", "1", "--gpu-memory", "20G"}, gpuReq{}, "--gpus and --gpu-memory are both given"},
		{"both, service", KindService, []string{"--service-request-endpoint", "TCP:h:1", "--gpus", "1", "--gpu-memory", "2G"}, gpuReq{}, "--gpus and --gpu-memory are both given"},
		{"malformed size", KindRun, []string{"--gpu-memory", "12X"}, gpuReq{}, `--gpu-memory: memory size "12X": unknown unit`},
		{"zero size", KindJob, []string{"--gpu-memory", "0"}, gpuReq{}, "--gpu-memory: \"0\": the size must be positive"},
		{"model alone", KindRun, []string{"--gpu-model", "A100"}, gpuReq{}, "--gpu-model needs --gpus or --gpu-memory"},
		{"model alone, reserve", KindReserve, []string{"--gpu-model", "A100"}, gpuReq{}, "--gpu-model needs --gpus: say how many GPUs"},
		{"empty model", KindJob, []string{"--gpus", "1", "--gpu-model", " "}, gpuReq{}, "--gpu-model: empty GPU model"},
		{"model with a newline", KindJob, []string{"--gpus", "1", "--gpu-model", "A\n100"}, gpuReq{}, "has control characters"},
		{"model too long", KindRun, []string{"--gpus", "1", "--gpu-model", strings.Repeat("x", MaxGPUModel+1)}, gpuReq{}, "GPU model of 129 bytes: at most 128"},
		{"reserve has no slices", KindReserve, []string{"--gpu-memory", "20G"}, gpuReq{}, "unknown flag: --gpu-memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := parseFlags(t, tc.kind, nil, nil, tc.args...)
			var got gpuReq
			if err == nil {
				got, err = buildGPU(tc.kind, raw)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "process_gpu") {
				t.Errorf("error %q names a spec key, not the flag typed", err)
			}
		})
	}
}

// TestGPUSpecFiles: the keys in YAML and DUCC properties files, and the
// errors naming the key and where it was written.
func TestGPUSpecFiles(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		kind             Kind
		want             gpuReq
		err              string
	}{
		{"yaml job", "j.yaml", "process_executable: w\nprocess_gpus: 4\nprocess_gpu_model: L4\n", KindJob, gpuReq{4, 0, "L4"}, ""},
		{"yaml job slice", "j.yaml", "process_executable: w\nprocess_gpu_memory: 20G\n", KindJob, gpuReq{0, 20 << 30, ""}, ""},
		{"properties job", "j.properties", "process_executable = w\nprocess_gpu_memory = 10\nprocess_gpu_model = NVIDIA A100-SXM4-80GB\n", KindJob, gpuReq{0, 10 << 30, "NVIDIA A100-SXM4-80GB"}, ""},
		{"properties service", "s.properties", "service_request_endpoint = TCP:h:1\nprocess_gpus = 1\n", KindService, gpuReq{1, 0, ""}, ""},
		{"yaml service slice", "s.yaml", "service_request_endpoint: TCP:h:1\nprocess_gpu_memory: 8G\n", KindService, gpuReq{0, 8 << 30, ""}, ""},
		{"yaml run", "r.yaml", "process_executable: w\nprocess_gpus: 1\n", KindRun, gpuReq{1, 0, ""}, ""},

		{"yaml negative", "j.yaml", "process_executable: w\nprocess_gpus: -1\n", KindJob, gpuReq{}, "j.yaml:2: process_gpus: must not be negative, got -1"},
		{"yaml list", "j.yaml", "process_executable: w\nprocess_gpus: [1, 2]\n", KindJob, gpuReq{}, "process_gpus takes one value, not a list"},
		{"properties both", "j.properties", "process_executable = w\nprocess_gpus = 1\nprocess_gpu_memory = 2G\n", KindJob, gpuReq{}, "process_gpus and process_gpu_memory are both given: ask for whole GPUs or a slice of one GPU's memory, not both"},
		{"yaml bad size", "s.yaml", "service_request_endpoint: TCP:h:1\nprocess_gpu_memory: lots\n", KindService, gpuReq{}, "s.yaml:2: process_gpu_memory: "},
		{"yaml model alone", "j.yaml", "process_executable: w\nprocess_gpu_model: H100\n", KindJob, gpuReq{}, "process_gpu_model needs process_gpus or process_gpu_memory"},
		{"misspelt", "j.yaml", "process_executable: w\nprocess_gpu: 1\n", KindJob, gpuReq{}, `unknown key "process_gpu"; did you mean "process_gpus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _, err := ParseFile(writeSpec(t, tc.file, tc.text), tc.kind)
			var got gpuReq
			if err == nil {
				got, err = buildGPU(tc.kind, raw)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGPUValidate: the wire requests as the head gets them, from any
// client.
func TestGPUValidate(t *testing.T) {
	svc := wire.ServiceSpec{Endpoint: "TCP:h:1", Executable: "/s", Instances: 1}
	withSvc := func(f func(*wire.ServiceSpec)) wire.ServiceSpec { s := svc; f(&s); return s }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"job gpus", ValidateJob(wire.JobSpec{Executable: "w", GPUs: 2, GPUModel: "L4"}), ""},
		{"job slice", ValidateJob(wire.JobSpec{Executable: "w", GPUMemory: 1 << 30}), ""},
		{"job negative", ValidateJob(wire.JobSpec{Executable: "w", GPUs: -1}), "process_gpus must not be negative, got -1"},
		{"job negative slice", ValidateJob(wire.JobSpec{Executable: "w", GPUMemory: -1}), "process_gpu_memory must not be negative"},
		{"job both", ValidateJob(wire.JobSpec{Executable: "w", GPUs: 1, GPUMemory: 1}), "process_gpus and process_gpu_memory are both given"},
		{"job model alone", ValidateJob(wire.JobSpec{Executable: "w", GPUModel: "L4"}), "process_gpu_model needs process_gpus or process_gpu_memory"},
		{"job model not normalized", ValidateJob(wire.JobSpec{Executable: "w", GPUs: 1, GPUModel: " L4"}), `process_gpu_model: write "L4"`},
		{"service both", ValidateService(withSvc(func(s *wire.ServiceSpec) { s.GPUs, s.GPUMemory = 1, 1 })), "not both"},
		{"service slice", ValidateService(withSvc(func(s *wire.ServiceSpec) { s.GPUMemory = 1 << 30 })), ""},
		{"run both", ValidateRun(wire.RunRequest{Path: "x", GPUs: 1, GPUMemory: 1}), "not both"},
		{"run model alone", ValidateRun(wire.RunRequest{Path: "x", GPUModel: "L4"}), "needs process_gpus"},
		{"run ok", ValidateRun(wire.RunRequest{Path: "x", GPUs: 1, GPUModel: "L4"}), ""},
		{"reserve ok", ValidateReserve(wire.ReserveRequest{Memory: 1, GPUs: 8, GPUModel: "H100"}), ""},
		{"reserve negative", ValidateReserve(wire.ReserveRequest{Memory: 1, GPUs: -8}), "process_gpus must not be negative"},
		{"reserve model alone", ValidateReserve(wire.ReserveRequest{Memory: 1, GPUModel: "H100"}), "process_gpu_model needs process_gpus:"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestGPUKeysNotModifiable: a service's instances keep the GPUs they
// were registered with.
func TestGPUKeysNotModifiable(t *testing.T) {
	for _, k := range []string{"process_gpus", "process_gpu_memory", "process_gpu_model"} {
		if err := CheckModify([]string{k}); err == nil || !strings.Contains(err.Error(), k+" cannot be modified") {
			t.Errorf("CheckModify(%s) = %v", k, err)
		}
	}
}
