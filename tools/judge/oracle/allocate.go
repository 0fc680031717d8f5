package main

// The "allocate" query: pods with ResourceClaims placed one after another on the given
// nodes by the scheduler's structured allocator, keeping what earlier pods were allocated.
//
// Per pod this does what the DynamicResources plugin of kube-scheduler does
// (k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go
// @v1.37.2): PreFilter gathers the allocated state (devices, shared device ids, consumed
// capacity) and builds one allocator with structured.NewAllocator(ctx,
// AllocatorFeatures(fts), state, classes, slices, celCache); Filter calls
// Allocate(ctx, node, claims) per node. A nil result means the claims cannot be allocated
// on that node, an error wrapping structured.ErrFailedAllocationOnNode fails that node only,
// any other error fails the pod's scheduling attempt (k8s.io/dynamic-resource-allocation
// structured/allocator.go@v0.37.2, the Allocator interface). Which node a pod lands on is
// the scheduler's scoring, not the allocator's; here it is the caller's: the pod's "nodes"
// in order ("first"), or the node with the most devices already allocated first, ties in
// the given order ("packed", the bin-packing a harness that fills nodes wants).
//
// Between pods the allocation results become allocated state as the scheduler's claim
// tracker does it (dynamicresources/allocateddevices.go@v1.37.2 foreachAllocatedDevice):
// admin-access results are not allocated; with DRAConsumableCapacity a result with a share
// id is a shared device id plus its consumed capacity; everything else is a dedicated
// device.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
)

// allocatorFeatures are the allocator's feature switches; absent fields take what the 1.37
// scheduler derives from its default gates (schedulerFeatures).
type allocatorFeatures struct {
	AdminAccess            *bool `json:"adminAccess,omitempty"`
	ConsumableCapacity     *bool `json:"consumableCapacity,omitempty"`
	DeviceBindingAndStatus *bool `json:"deviceBindingAndStatus,omitempty"`
	DeviceTaints           *bool `json:"deviceTaints,omitempty"`
	ListTypeAttributes     *bool `json:"listTypeAttributes,omitempty"`
	PartitionableDevices   *bool `json:"partitionableDevices,omitempty"`
	PrioritizedList        *bool `json:"prioritizedList,omitempty"`
}

// schedulerFeatures is AllocatorFeatures(NewSchedulerFeaturesFromGates(defaults)) of
// kube-scheduler 1.37: k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources/
// dynamicresources.go@v1.37.2 AllocatorFeatures maps EnableDRAAdminAccess (DRAAdminAccess:
// GA in 1.36, locked on), EnableDRAPrioritizedList (GA, locked on in 1.37),
// EnableDRAPartitionableDevices (beta from 1.36, on), EnableDRADeviceTaints (GA in 1.37, on),
// EnableDRADeviceBindingConditions (beta from 1.36, on) && EnableDRAResourceClaimDeviceStatus
// (GA, locked on in 1.37), and EnableDRAConsumableCapacity (beta from 1.36, on); the defaults
// are those of pkg/features/kube_features.go@v1.37.2. The features it maps besides
// (FractionalCapacityRange: beta but off at the default compatibility version 1.36;
// ListTypeAttributes, OptionalNodeOperations, DerivedAttributes, CompatibilityGroups: alpha)
// are off. NewAllocator then picks the first implementation whose supported features cover
// these (structured/allocator.go@v0.37.2).
func schedulerFeatures() structured.Features {
	return structured.Features{
		AdminAccess:            true,
		PrioritizedList:        true,
		PartitionableDevices:   true,
		DeviceTaints:           true,
		DeviceBindingAndStatus: true,
		ConsumableCapacity:     true,
	}
}

func (f allocatorFeatures) resolve() structured.Features {
	d := schedulerFeatures()
	return structured.Features{
		AdminAccess:            deref(f.AdminAccess, d.AdminAccess),
		ConsumableCapacity:     deref(f.ConsumableCapacity, d.ConsumableCapacity),
		DeviceBindingAndStatus: deref(f.DeviceBindingAndStatus, d.DeviceBindingAndStatus),
		DeviceTaints:           deref(f.DeviceTaints, d.DeviceTaints),
		ListTypeAttributes:     deref(f.ListTypeAttributes, d.ListTypeAttributes),
		PartitionableDevices:   deref(f.PartitionableDevices, d.PartitionableDevices),
		PrioritizedList:        deref(f.PrioritizedList, d.PrioritizedList),
	}
}

type nodeSpec struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Taints []v1.Taint        `json:"taints,omitempty"`
}

type claimSpec struct {
	Name string                        `json:"name"`
	Spec resourceapi.ResourceClaimSpec `json:"spec"`
}

type podSpec struct {
	Name      string      `json:"name"`
	Namespace string      `json:"namespace,omitempty"`
	Claims    []claimSpec `json:"claims"`
	// Nodes: the candidate nodes in the order they are tried; absent: every node of the
	// query, in its order.
	Nodes  []string `json:"nodes,omitempty"`
	Policy string   `json:"policy,omitempty"`
	// The pod's scheduling fields: a node its required node affinity (nodeSelector and
	// affinity) does not match, or with a NoSchedule/NoExecute taint it does not tolerate,
	// is filtered out before allocation, as the NodeAffinity and TaintToleration plugins do
	// (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go and
	// tainttoleration/taint_toleration.go@v1.37.2, on k8s.io/component-helpers
	// scheduling/corev1; TaintTolerationComparisonOperators is alpha and off in 1.37).
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Affinity     *v1.Affinity      `json:"affinity,omitempty"`
	Tolerations  []v1.Toleration   `json:"tolerations,omitempty"`
}

type allocateQuery struct {
	Features       allocatorFeatures           `json:"features,omitempty"`
	DeviceClasses  []resourceapi.DeviceClass   `json:"deviceClasses"`
	ResourceSlices []resourceapi.ResourceSlice `json:"resourceSlices"`
	Nodes          []nodeSpec                  `json:"nodes"`
	Pods           []podSpec                   `json:"pods"`
}

type allocatedDevice struct {
	Request string `json:"request"`
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Device  string `json:"device"`
}

type claimAnswer struct {
	Name    string            `json:"name"`
	Devices []allocatedDevice `json:"devices"`
	// Counters: what the claim's devices consume of their pools' shared counters, keyed
	// "<pool>/<counterSet>/<counter>" (the allocator's own view: consumesCounters of each
	// allocated device, summed).
	Counters map[string]string `json:"counters,omitempty"`
}

type podAnswer struct {
	Name string `json:"name"`
	// Node: where the claims were allocated; empty when no candidate node could hold them.
	Node   string        `json:"node,omitempty"`
	Claims []claimAnswer `json:"claims,omitempty"`
	// Unschedulable: per candidate node where allocation failed, why ("cannot allocate all
	// claims", or the allocator's node-level error).
	Unschedulable map[string]string `json:"unschedulable,omitempty"`
	// Error: a fatal allocator error (bad input such as a CEL run-time error): the
	// scheduler aborts the attempt, the pod stays Pending.
	Error string `json:"error,omitempty"`
}

type allocateAnswer struct {
	Features structured.Features `json:"features"`
	Pods     []podAnswer         `json:"pods"`
}

// classLister serves the query's DeviceClasses as the scheduler's informer would.
type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]*resourceapi.DeviceClass, 0, len(names))
	for _, name := range names {
		out = append(out, l[name])
	}
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	class, ok := l[name]
	if !ok {
		return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
	}
	return class, nil
}

// counterKey identifies one device of the slices, to look up what it consumes.
type counterKey struct{ driver, pool, device string }

func handleAllocate(line []byte) (any, error) {
	var q allocateQuery
	if err := json.Unmarshal(line, &q); err != nil {
		return nil, fmt.Errorf("allocate query: %w", err)
	}
	features := q.Features.resolve()
	ctx := context.Background()

	classes := classLister{}
	for i := range q.DeviceClasses {
		classes[q.DeviceClasses[i].Name] = &q.DeviceClasses[i]
	}
	slices := make([]*resourceapi.ResourceSlice, len(q.ResourceSlices))
	consumes := map[counterKey][]resourceapi.DeviceCounterConsumption{}
	for i := range q.ResourceSlices {
		slice := &q.ResourceSlices[i]
		slices[i] = slice
		for _, device := range slice.Spec.Devices {
			key := counterKey{slice.Spec.Driver, slice.Spec.Pool.Name, device.Name}
			consumes[key] = device.ConsumesCounters
		}
	}
	nodes := map[string]*v1.Node{}
	var allNodes []string
	for _, n := range q.Nodes {
		nodes[n.Name] = &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
			Spec:       v1.NodeSpec{Taints: n.Taints},
		}
		allNodes = append(allNodes, n.Name)
	}
	// The CEL cache the plugin holds (dynamicresources.go@v1.37.2 New).
	celCache := dracel.NewCache(10, dracel.Features{
		EnableConsumableCapacity: features.ConsumableCapacity,
		EnableListTypeAttributes: features.ListTypeAttributes,
	})
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	perNode := map[string]int{}

	out := allocateAnswer{Features: features, Pods: []podAnswer{}}
	for podIndex, pod := range q.Pods {
		answer := podAnswer{Name: pod.Name}
		claims := make([]*resourceapi.ResourceClaim, len(pod.Claims))
		for i, c := range pod.Claims {
			claims[i] = &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{
					Name:      pod.Name + "-" + c.Name,
					Namespace: pod.Namespace,
					UID:       types.UID(fmt.Sprintf("claim-%d-%d", podIndex, i)),
				},
				Spec: c.Spec,
			}
		}
		allocator, err := structured.NewAllocator(ctx, features, cloneState(state), classes, slices, celCache)
		if err != nil {
			answer.Error = "NewAllocator: " + err.Error()
			out.Pods = append(out.Pods, answer)
			continue
		}
		if len(pod.Nodes) == 0 {
			pod.Nodes = allNodes
		}
		scheduling := &v1.Pod{Spec: v1.PodSpec{
			NodeSelector: pod.NodeSelector, Affinity: pod.Affinity, Tolerations: pod.Tolerations,
		}}
		affinity := nodeaffinity.GetRequiredNodeAffinity(scheduling)
		for _, nodeName := range candidateOrder(pod, perNode) {
			node, ok := nodes[nodeName]
			if !ok {
				answer.Error = fmt.Sprintf("pod %s names node %q, which the query does not declare", pod.Name, nodeName)
				break
			}
			if reason := filtered(affinity, scheduling, node); reason != "" {
				answer.setUnschedulable(nodeName, reason)
				continue
			}
			results, err := allocator.Allocate(ctx, node, claims)
			if err != nil {
				if errors.Is(err, structured.ErrFailedAllocationOnNode) {
					answer.setUnschedulable(nodeName, err.Error())
					continue
				}
				answer.Error = err.Error()
				break
			}
			if results == nil {
				answer.setUnschedulable(nodeName, "cannot allocate all claims")
				continue
			}
			answer.Node = nodeName
			for i := range results {
				answer.Claims = append(answer.Claims, describe(pod.Claims[i].Name, &results[i], consumes))
				perNode[nodeName] += commit(&state, &results[i], features.ConsumableCapacity)
			}
			break
		}
		out.Pods = append(out.Pods, answer)
	}
	return out, nil
}

// filtered says why the NodeAffinity or TaintToleration filter rejects the node ("" when
// neither does), in those plugins' words.
func filtered(affinity nodeaffinity.RequiredNodeAffinity, pod *v1.Pod, node *v1.Node) string {
	matched, err := affinity.Match(node)
	if err != nil {
		return "node affinity: " + err.Error()
	}
	if !matched {
		return "node(s) didn't match Pod's node affinity/selector"
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints,
		pod.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	return ""
}

func (a *podAnswer) setUnschedulable(node, reason string) {
	if a.Unschedulable == nil {
		a.Unschedulable = map[string]string{}
	}
	a.Unschedulable[node] = reason
}

// candidateOrder is the order in which a pod's nodes are tried.
func candidateOrder(pod podSpec, perNode map[string]int) []string {
	order := append([]string(nil), pod.Nodes...)
	if pod.Policy == "packed" {
		sort.SliceStable(order, func(i, j int) bool { return perNode[order[i]] > perNode[order[j]] })
	}
	return order
}

func cloneState(s structured.AllocatedState) structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         s.AllocatedDevices.Clone(),
		AllocatedSharedDeviceIDs: s.AllocatedSharedDeviceIDs.Clone(),
		AggregatedCapacity:       s.AggregatedCapacity.Clone(),
	}
}

// commit records one claim's allocation as allocated state (foreachAllocatedDevice) and
// returns how many devices it holds.
func commit(state *structured.AllocatedState, result *resourceapi.AllocationResult, consumable bool) int {
	held := 0
	for _, r := range result.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		held++
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if consumable && r.ShareID != nil {
			state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
			continue
		}
		state.AllocatedDevices.Insert(id)
	}
	return held
}

func describe(name string, result *resourceapi.AllocationResult, consumes map[counterKey][]resourceapi.DeviceCounterConsumption) claimAnswer {
	answer := claimAnswer{Name: name, Devices: []allocatedDevice{}}
	totals := map[string]*resource.Quantity{}
	for _, r := range result.Devices.Results {
		answer.Devices = append(answer.Devices, allocatedDevice{
			Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device,
		})
		for _, consumption := range consumes[counterKey{r.Driver, r.Pool, r.Device}] {
			for counter, value := range consumption.Counters {
				key := r.Pool + "/" + consumption.CounterSet + "/" + counter
				if totals[key] == nil {
					zero := resource.MustParse("0")
					totals[key] = &zero
				}
				totals[key].Add(value.Value)
			}
		}
	}
	if len(totals) > 0 {
		answer.Counters = map[string]string{}
		for key, value := range totals {
			answer.Counters[key] = value.String()
		}
	}
	return answer
}
