package main

// The "podsecurity" query: Pod Security admission's checks on the pods a workload creates.
//
// The evaluator is k8s.io/pod-security-admission policy.NewEvaluator(policy.DefaultChecks(),
// nil) (as cmd/webhook/server/server.go@v0.37.2 builds it) and EvaluatePod(level@version,
// metadata, spec): one CheckResult per check that applies at that level and version, in the
// registry's order. To name the check behind each result, every check's CheckPod is wrapped
// to record its ID before it returns; the registry's own logic (versions, restricted
// overriding baseline checks) decides which run.
//
// The pod template is taken from the object as PodSecurity admission takes it
// (admission/admission.go@v0.37.2 DefaultPodSpecExtractor): Pod, PodTemplate,
// ReplicationController, ReplicaSet, Deployment, DaemonSet, StatefulSet, Job, CronJob.
// A LeaderWorkerSet (leaderworkerset.x-k8s.io) is no resource admission extracts; its
// controller creates pods from spec.leaderWorkerTemplate.leaderTemplate (when set) and
// .workerTemplate, which are evaluated as pods (enforce applies to pods).

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

type podSecurityQuery struct {
	Level   string          `json:"level"`
	Version string          `json:"version,omitempty"`
	Object  json.RawMessage `json:"object"`
}

type forbidden struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

type templateAnswer struct {
	// Path: where the pod template lies in the object ("spec.template", "spec", ...).
	Path      string      `json:"path"`
	Allowed   bool        `json:"allowed"`
	Forbidden []forbidden `json:"forbidden,omitempty"`
	// Checks: every check that ran, in order.
	Checks []string `json:"checks"`
}

type podSecurityAnswer struct {
	Level     string           `json:"level"`
	Version   string           `json:"version"`
	Templates []templateAnswer `json:"templates"`
	// Overrides: at the restricted level, each baseline check that a restricted check
	// replaces at this version (its OverrideCheckIDs), and the check that replaces it.
	Overrides map[string]string `json:"overrides,omitempty"`
}

// recorder collects the IDs of the checks as they run (the oracle answers one query at a
// time, so one recorder serves every evaluation).
type recorder struct{ ids []policy.CheckID }

var (
	podSecurityRecorder  = &recorder{}
	podSecurityEvaluator policy.Evaluator
)

func evaluator() (policy.Evaluator, error) {
	if podSecurityEvaluator != nil {
		return podSecurityEvaluator, nil
	}
	var checks []policy.Check
	for _, check := range policy.DefaultChecks() {
		wrapped := check
		wrapped.Versions = make([]policy.VersionedCheck, len(check.Versions))
		for i, versioned := range check.Versions {
			id, inner := check.ID, versioned.CheckPod
			versioned.CheckPod = func(meta *metav1.ObjectMeta, spec *corev1.PodSpec) policy.CheckResult {
				podSecurityRecorder.ids = append(podSecurityRecorder.ids, id)
				return inner(meta, spec)
			}
			wrapped.Versions[i] = versioned
		}
		checks = append(checks, wrapped)
	}
	e, err := policy.NewEvaluator(checks, nil)
	if err != nil {
		return nil, err
	}
	podSecurityEvaluator = e
	return e, nil
}

type namedTemplate struct {
	path string
	meta *metav1.ObjectMeta
	spec *corev1.PodSpec
}

func handlePodSecurity(line []byte) (any, error) {
	var q podSecurityQuery
	if err := json.Unmarshal(line, &q); err != nil {
		return nil, fmt.Errorf("podsecurity query: %w", err)
	}
	level, err := api.ParseLevel(q.Level)
	if err != nil {
		return nil, err
	}
	versionText := q.Version
	if versionText == "" {
		versionText = "latest"
	}
	v, err := api.ParseVersion(versionText)
	if err != nil {
		return nil, err
	}
	templates, err := podTemplates(q.Object)
	if err != nil {
		return nil, err
	}
	e, err := evaluator()
	if err != nil {
		return nil, err
	}
	out := podSecurityAnswer{Level: string(level), Version: v.String(), Templates: []templateAnswer{}}
	if level == api.LevelRestricted {
		out.Overrides = overrides(v)
	}
	for _, t := range templates {
		podSecurityRecorder.ids = nil
		results := e.EvaluatePod(api.LevelVersion{Level: level, Version: v}, t.meta, t.spec)
		if len(results) != len(podSecurityRecorder.ids) {
			return nil, fmt.Errorf("internal: %d results from %d checks", len(results), len(podSecurityRecorder.ids))
		}
		answer := templateAnswer{Path: t.path, Allowed: true, Checks: []string{}}
		for i, r := range results {
			id := string(podSecurityRecorder.ids[i])
			answer.Checks = append(answer.Checks, id)
			if !r.Allowed {
				answer.Allowed = false
				answer.Forbidden = append(answer.Forbidden, forbidden{Check: id, Reason: r.ForbiddenReason, Detail: r.ForbiddenDetail})
			}
		}
		out.Templates = append(out.Templates, answer)
	}
	return out, nil
}

// podTemplates finds the pod template(s) of a workload object by its kind.
func podTemplates(raw json.RawMessage) ([]namedTemplate, error) {
	var head metav1.TypeMeta
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	fromTemplate := func(path string, t *corev1.PodTemplateSpec) []namedTemplate {
		if t == nil {
			return nil
		}
		return []namedTemplate{{path, &t.ObjectMeta, &t.Spec}}
	}
	decode := func(into any) error {
		if err := json.Unmarshal(raw, into); err != nil {
			return fmt.Errorf("%s: %w", head.Kind, err)
		}
		return nil
	}
	switch head.Kind {
	case "Pod":
		var o corev1.Pod
		if err := decode(&o); err != nil {
			return nil, err
		}
		return []namedTemplate{{"spec", &o.ObjectMeta, &o.Spec}}, nil
	case "PodTemplate":
		var o corev1.PodTemplate
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("template", &o.Template), nil
	case "ReplicationController":
		var o corev1.ReplicationController
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("spec.template", o.Spec.Template), nil
	case "ReplicaSet":
		var o appsv1.ReplicaSet
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("spec.template", &o.Spec.Template), nil
	case "Deployment":
		var o appsv1.Deployment
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("spec.template", &o.Spec.Template), nil
	case "DaemonSet":
		var o appsv1.DaemonSet
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("spec.template", &o.Spec.Template), nil
	case "StatefulSet":
		var o appsv1.StatefulSet
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("spec.template", &o.Spec.Template), nil
	case "Job":
		var o batchv1.Job
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("spec.template", &o.Spec.Template), nil
	case "CronJob":
		var o batchv1.CronJob
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fromTemplate("spec.jobTemplate.spec.template", &o.Spec.JobTemplate.Spec.Template), nil
	case "LeaderWorkerSet":
		// leaderworkerset.x-k8s.io/v1 api/leaderworkerset/v1/leaderworkerset_types.go:
		// spec.leaderWorkerTemplate.{leaderTemplate (optional), workerTemplate}.
		var o struct {
			Spec struct {
				LeaderWorkerTemplate struct {
					LeaderTemplate *corev1.PodTemplateSpec `json:"leaderTemplate"`
					WorkerTemplate corev1.PodTemplateSpec  `json:"workerTemplate"`
				} `json:"leaderWorkerTemplate"`
			} `json:"spec"`
		}
		if err := decode(&o); err != nil {
			return nil, err
		}
		t := o.Spec.LeaderWorkerTemplate
		out := fromTemplate("spec.leaderWorkerTemplate.leaderTemplate", t.LeaderTemplate)
		return append(out, fromTemplate("spec.leaderWorkerTemplate.workerTemplate", &t.WorkerTemplate)...), nil
	default:
		return nil, fmt.Errorf("kind %q has no pod template Pod Security evaluates", head.Kind)
	}
}

// overrides maps each baseline check to the restricted check that replaces it at version v:
// the OverrideCheckIDs of the newest versioned entry of each restricted check whose
// MinimumVersion is not after v (the registry's inflateVersions, registry.go@v0.37.2).
func overrides(v api.Version) map[string]string {
	out := map[string]string{}
	for _, check := range policy.DefaultChecks() {
		if check.Level != api.LevelRestricted {
			continue
		}
		var current *policy.VersionedCheck
		for i := range check.Versions {
			if !v.Older(check.Versions[i].MinimumVersion) {
				current = &check.Versions[i]
			}
		}
		if current == nil {
			continue
		}
		for _, id := range current.OverrideCheckIDs {
			out[string(id)] = string(check.ID)
		}
	}
	return out
}
