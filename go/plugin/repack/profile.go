package repack

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "volcano.sh/repack/api/v1alpha1"
)

// Profile is a pod's scheduling rules as the contract's TaskProfile: its labels, scheduler,
// controller owner's kind, node selector, node and pod (anti-)affinity, tolerations, host ports
// and topology spread constraints, copied field by field (sidecar/snapshot/kube.py _profile).
func Profile(pod *v1.Pod) *pb.TaskProfile {
	if pod == nil {
		return &pb.TaskProfile{SchedulerName: defaultScheduler}
	}
	spec := &pod.Spec
	p := &pb.TaskProfile{Labels: pod.Labels, SchedulerName: spec.SchedulerName, NodeSelector: spec.NodeSelector}
	if p.SchedulerName == "" {
		p.SchedulerName = defaultScheduler
	}
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil {
		p.OwnerKind = owner.Kind
	}
	if a := spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
				for i := range req.NodeSelectorTerms {
					p.RequiredNodeAffinity = append(p.RequiredNodeAffinity, nodeTerm(&req.NodeSelectorTerms[i]))
				}
			}
			for _, w := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				p.PreferredNodeAffinity = append(p.PreferredNodeAffinity,
					&pb.PreferredSchedulingTerm{Weight: w.Weight, Preference: nodeTerm(&w.Preference)})
			}
		}
		if pa := a.PodAffinity; pa != nil {
			p.PodAffinity = podTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			p.PreferredPodAffinity = weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if paa := a.PodAntiAffinity; paa != nil {
			p.PodAntiAffinity = podTerms(paa.RequiredDuringSchedulingIgnoredDuringExecution)
			p.PreferredPodAntiAffinity = weightedTerms(paa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	for _, t := range spec.Tolerations {
		p.Tolerations = append(p.Tolerations, &pb.Toleration{
			Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect),
		})
	}
	for _, c := range spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			protocol := string(port.Protocol)
			if protocol == string(v1.ProtocolTCP) {
				protocol = "" // the contract's default
			}
			p.HostPorts = append(p.HostPorts, &pb.HostPort{Port: port.HostPort, Protocol: protocol, HostIp: port.HostIP})
		}
	}
	for _, c := range spec.TopologySpreadConstraints {
		t := &pb.TopologySpreadConstraint{
			MaxSkew: c.MaxSkew, TopologyKey: c.TopologyKey, WhenUnsatisfiable: string(c.WhenUnsatisfiable),
			LabelSelector: selector(c.LabelSelector), MatchLabelKeys: c.MatchLabelKeys,
		}
		if c.MinDomains != nil {
			t.MinDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			t.NodeAffinityPolicy = string(*c.NodeAffinityPolicy)
		}
		if c.NodeTaintsPolicy != nil {
			t.NodeTaintsPolicy = string(*c.NodeTaintsPolicy)
		}
		p.TopologySpreadConstraints = append(p.TopologySpreadConstraints, t)
	}
	return p
}

func nodeTerm(t *v1.NodeSelectorTerm) *pb.NodeSelectorTerm {
	out := &pb.NodeSelectorTerm{}
	for _, r := range t.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, &pb.Requirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values})
	}
	for _, r := range t.MatchFields {
		out.MatchFields = append(out.MatchFields, &pb.Requirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values})
	}
	return out
}

func selector(s *metav1.LabelSelector) *pb.LabelSelector {
	if s == nil {
		return nil
	}
	out := &pb.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, &pb.Requirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values})
	}
	return out
}

func podTerm(t *v1.PodAffinityTerm) *pb.PodAffinityTerm {
	return &pb.PodAffinityTerm{
		LabelSelector: selector(t.LabelSelector), Namespaces: t.Namespaces,
		NamespaceSelector: selector(t.NamespaceSelector), TopologyKey: t.TopologyKey,
	}
}

func podTerms(terms []v1.PodAffinityTerm) []*pb.PodAffinityTerm {
	var out []*pb.PodAffinityTerm
	for i := range terms {
		out = append(out, podTerm(&terms[i]))
	}
	return out
}

func weightedTerms(terms []v1.WeightedPodAffinityTerm) []*pb.WeightedPodAffinityTerm {
	var out []*pb.WeightedPodAffinityTerm
	for i := range terms {
		out = append(out, &pb.WeightedPodAffinityTerm{Weight: terms[i].Weight, Term: podTerm(&terms[i].PodAffinityTerm)})
	}
	return out
}
