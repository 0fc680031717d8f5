// Command oracle answers questions about DRA selectors, DRA allocation and Pod Security with
// the upstream Kubernetes code itself, built from the published staging modules at v0.37.2:
//
//   - k8s.io/dynamic-resource-allocation cel: the compiler the API server validates
//     DeviceClass and ResourceClaim selectors with, and the scheduler evaluates them with;
//   - k8s.io/dynamic-resource-allocation structured: the scheduler's structured allocator;
//   - k8s.io/pod-security-admission policy: the checks PodSecurity admission runs.
//
// It reads one JSON query per line on stdin and writes one JSON answer per line on stdout,
// in order, so that one process answers many queries. Every query is an object with a
// "kind" ("cel", "allocate", "podsecurity" or "version") and an optional "id" that the
// answer repeats. A query that cannot be answered (bad JSON, an unknown kind, an object
// that does not decode) gets {"id": ..., "error": "..."}: errors are data, and the process
// keeps serving. The process ends at end of input.
//
// Flags: -emulate 1.MINOR sets the emulated Kubernetes version of the CEL environment (the
// API server's --emulated-version: 1.34 to 1.37 at this binary version); the default is the
// binary version 1.37 (k8s.io/component-base version/base.go DefaultKubeBinaryVersion, used
// when the build carries no git version, see k8s.io/apiserver pkg/util/compatibility
// version.go DefaultBuildEffectiveVersion).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/util/compatibility"
	basecompatibility "k8s.io/component-base/compatibility"
)

// query is the envelope every line of input carries; the body is decoded by its kind.
type query struct {
	ID   json.RawMessage `json:"id,omitempty"`
	Kind string          `json:"kind"`
}

// answer is written as one line: the query's id, and either the kind's result or an error.
type answer struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Kind   string          `json:"kind,omitempty"`
	Error  string          `json:"error,omitempty"`
	Result any             `json:"result,omitempty"`
}

func main() {
	emulate := flag.String("emulate", "", "emulated Kubernetes version 1.MINOR of the CEL environment")
	flag.Parse()
	if *emulate != "" {
		if err := setEmulatedVersion(*emulate); err != nil {
			fmt.Fprintln(os.Stderr, "oracle:", err)
			os.Exit(2)
		}
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(1)
	}
}

// setEmulatedVersion lowers the emulation version of the "kube" component before any CEL
// environment is built: environment.DefaultCompatibilityVersion reads it from
// compatibility.DefaultComponentGlobalsRegistry (k8s.io/apiserver pkg/cel/environment
// base.go), and the NewExpressions environment then holds what that version's API server
// offers new objects (emulation version minus one).
func setEmulatedVersion(text string) error {
	v, err := version.ParseMajorMinor(strings.TrimPrefix(text, "v"))
	if err != nil {
		return fmt.Errorf("-emulate %q: %w", text, err)
	}
	effective := compatibility.DefaultComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent)
	mutable, ok := effective.(basecompatibility.MutableEffectiveVersion)
	if !ok {
		return errors.New("the kube component's effective version cannot be changed")
	}
	mutable.SetEmulationVersion(v)
	if errs := mutable.Validate(); len(errs) > 0 {
		return fmt.Errorf("-emulate %s: %v", text, errors.Join(errs...))
	}
	return nil
}

func serve(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriter(out)
	encoder := json.NewEncoder(writer)
	encoder.SetEscapeHTML(false)
	for {
		line, err := reader.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if encErr := encoder.Encode(handle(line)); encErr != nil {
				return encErr
			}
			// One answer per query, flushed at once: the client waits for it.
			if flushErr := writer.Flush(); flushErr != nil {
				return flushErr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// handle answers one line, turning every failure (and a panic in upstream code) into data.
func handle(line []byte) (result answer) {
	var q query
	if err := json.Unmarshal(line, &q); err != nil {
		return answer{Error: "bad query: " + err.Error()}
	}
	result = answer{ID: q.ID, Kind: q.Kind}
	defer func() {
		if r := recover(); r != nil {
			result.Result = nil
			result.Error = fmt.Sprintf("panic: %v", r)
		}
	}()
	var (
		body any
		err  error
	)
	switch q.Kind {
	case "cel":
		body, err = handleCEL(line)
	case "allocate":
		body, err = handleAllocate(line)
	case "podsecurity":
		body, err = handlePodSecurity(line)
	case "version":
		body, err = versionInfo(), nil
	default:
		err = fmt.Errorf("unknown kind %q (want cel, allocate, podsecurity or version)", q.Kind)
	}
	if err != nil {
		result.Error = err.Error()
		return result
	}
	result.Result = body
	return result
}

// versionInfo says what this binary is: the modules it was built from, the CEL environment's
// compatibility version, and the limits the API server applies to selectors.
func versionInfo() map[string]any {
	modules := map[string]string{}
	goVersion := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		for _, dep := range info.Deps {
			if strings.HasPrefix(dep.Path, "k8s.io/") || dep.Path == "github.com/google/cel-go" {
				modules[dep.Path] = dep.Version
			}
		}
	}
	effective := compatibility.DefaultComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent)
	return map[string]any{
		"go":                         goVersion,
		"modules":                    modules,
		"binaryVersion":              effective.BinaryVersion().String(),
		"emulationVersion":           effective.EmulationVersion().String(),
		"celCompatibilityVersion":    environment.DefaultCompatibilityVersion().String(),
		"selectorMaxCost":            resourceapi.CELSelectorExpressionMaxCost,
		"selectorMaxLength":          resourceapi.CELSelectorExpressionMaxLength,
		"schedulerAllocatorFeatures": schedulerFeatures(),
	}
}
