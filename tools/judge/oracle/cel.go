package main

// The "cel" query: a DRA device selector compiled as the API server validates it, and
// evaluated as the scheduler evaluates it.
//
// Validation follows k8s.io/kubernetes pkg/apis/resource/validation/validation.go@v1.37.2
// validateCELSelector: an expression longer than CELSelectorExpressionMaxLength (10 Ki) is
// refused before compiling ("Too long"); otherwise it is compiled with
// dracel.GetCompiler(Features{EnableConsumableCapacity, EnableListTypeAttributes}) and
// Options{EnvType: NewExpressions} (a new object; StoredExpressions for an object already
// stored), and refused when the compiler reports an error or when the estimated worst-case
// cost result.MaxCost exceeds CELSelectorExpressionMaxCost (1,000,000; pkg/apis/resource
// types.go, the same value as k8s.io/api resource/v1 types.go): "too complex, exceeds cost
// limit". The compiler itself sets the same 1,000,000 as the program's run-time cost limit
// (k8s.io/dynamic-resource-allocation cel/compile.go@v0.37.2 CompileCELExpression).
//
// Evaluation follows the scheduler: its DynamicResources plugin compiles through
// cel.NewCache(10, Features{...}) (k8s.io/kubernetes pkg/scheduler/framework/plugins/
// dynamicresources/dynamicresources.go@v1.37.2 New), whose GetOrCompile uses the stored
// environment without cost estimation (cel/cache.go@v0.37.2), and calls DeviceMatches per
// device.

import (
	"context"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// celFeatures are the gates the selector compiler reads. Absent fields take the 1.37
// defaults (k8s.io/kubernetes pkg/features/kube_features.go@v1.37.2: DRAConsumableCapacity
// beta, on; DRAListTypeAttributes alpha, off).
type celFeatures struct {
	ConsumableCapacity *bool `json:"consumableCapacity,omitempty"`
	ListTypeAttributes *bool `json:"listTypeAttributes,omitempty"`
}

func (f celFeatures) compiler() dracel.Features {
	return dracel.Features{
		EnableConsumableCapacity: deref(f.ConsumableCapacity, true),
		EnableListTypeAttributes: deref(f.ListTypeAttributes, false),
	}
}

type celDevice struct {
	Driver                   string                                                    `json:"driver"`
	AllowMultipleAllocations *bool                                                     `json:"allowMultipleAllocations,omitempty"`
	Attributes               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes,omitempty"`
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity,omitempty"`
}

type celQuery struct {
	Expression string      `json:"expression"`
	Stored     bool        `json:"stored,omitempty"`
	Features   celFeatures `json:"features,omitempty"`
	Devices    []celDevice `json:"devices,omitempty"`
}

type celError struct {
	Type   string `json:"type"`
	Detail string `json:"detail"`
}

type celResult struct {
	Matched bool   `json:"matched"`
	Error   string `json:"error,omitempty"`
}

type celAnswer struct {
	// Accepted: the API server's validation accepts the selector.
	Accepted bool `json:"accepted"`
	// Compiled: the compiler reported no error (cost aside).
	Compiled bool `json:"compiled"`
	// CostLimit: refused because the estimated cost exceeds the limit.
	CostLimit bool `json:"costLimit"`
	// TooLong: refused before compiling, for its length.
	TooLong bool `json:"tooLong"`
	// MaxCost: the compiler's worst-case estimate (absent when it did not compile).
	MaxCost *uint64 `json:"maxCost,omitempty"`
	// Error: the compiler's error (type and detail), when it reported one.
	Error *celError `json:"error,omitempty"`
	// Validation: the API server's field error, as `kubectl apply` shows it.
	Validation string `json:"validation,omitempty"`
	// Results: per device, when the scheduler's compile succeeds (even if validation
	// refused the selector for its cost: Accepted says whether it was).
	Results []celResult `json:"results,omitempty"`
}

var selectorPath = field.NewPath("spec", "selectors").Index(0).Child("cel", "expression")

func handleCEL(line []byte) (any, error) {
	var q celQuery
	if err := json.Unmarshal(line, &q); err != nil {
		return nil, fmt.Errorf("cel query: %w", err)
	}
	features := q.Features.compiler()
	out := celAnswer{}
	if len(q.Expression) > resourceapi.CELSelectorExpressionMaxLength {
		out.TooLong = true
		out.Validation = field.TooLong(selectorPath, "", resourceapi.CELSelectorExpressionMaxLength).Error()
		return out, nil
	}
	envType := environment.NewExpressions
	if q.Stored {
		envType = environment.StoredExpressions
	}
	result := dracel.GetCompiler(features).CompileCELExpression(q.Expression, dracel.Options{EnvType: &envType})
	if result.Error != nil {
		out.Error = &celError{Type: string(result.Error.Type), Detail: result.Error.Detail}
		// convertCELErrorToValidationError (validation.go@v1.37.2).
		switch result.Error.Type {
		case apiservercel.ErrorTypeRequired:
			out.Validation = field.Required(selectorPath, result.Error.Detail).Error()
		case apiservercel.ErrorTypeInvalid:
			out.Validation = field.Invalid(selectorPath, q.Expression, result.Error.Detail).Error()
		default:
			out.Validation = field.InternalError(selectorPath, result.Error).Error()
		}
	} else {
		out.Compiled = true
		maxCost := result.MaxCost
		out.MaxCost = &maxCost
		if result.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
			out.CostLimit = true
			out.Validation = field.Forbidden(selectorPath, "too complex, exceeds cost limit").Error()
		} else {
			out.Accepted = true
		}
	}
	if len(q.Devices) == 0 {
		return out, nil
	}
	program := schedulerCache(features).GetOrCompile(q.Expression)
	if program.Error != nil {
		return out, nil
	}
	for _, device := range q.Devices {
		matched, _, err := program.DeviceMatches(context.Background(), dracel.Device{
			Driver:                   device.Driver,
			AllowMultipleAllocations: device.AllowMultipleAllocations,
			Attributes:               device.Attributes,
			Capacity:                 device.Capacity,
		})
		r := celResult{Matched: matched}
		if err != nil {
			r = celResult{Error: err.Error()}
		}
		out.Results = append(out.Results, r)
	}
	return out, nil
}

// schedulerCaches holds one cache per feature set, as the scheduler holds one.
var schedulerCaches = map[dracel.Features]*dracel.Cache{}

func schedulerCache(features dracel.Features) *dracel.Cache {
	cache, ok := schedulerCaches[features]
	if !ok {
		cache = dracel.NewCache(10, features)
		schedulerCaches[features] = cache
	}
	return cache
}

func deref[T any](p *T, fallback T) T {
	if p == nil {
		return fallback
	}
	return *p
}
