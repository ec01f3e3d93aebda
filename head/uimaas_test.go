package head_test

import (
	"strconv"
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// uimaasSpec is a UIMA-AS registration as the CLI sends it for DUCC's
// sleepjobs/1.service (spec.BuildService): endpoints and arguments still
// hold ${DefaultBrokerURL}.
func uimaasSpec() wire.ServiceSpec {
	ep := "UIMA-AS:TopLevelTaeQueue:${DefaultBrokerURL}"
	return wire.ServiceSpec{Endpoint: ep, DDEndpoint: ep, ProcessDD: "dd.xml", JVMArgs: []string{"-DDefaultBrokerURL=${DefaultBrokerURL}"},
		Executable: "java", Args: []string{"-DDefaultBrokerURL=${DefaultBrokerURL}", "-cp", "x.jar", "ducc.uima.ServiceMain", "--dd", "dd.xml", "--endpoint", ep},
		PingExecutable: "/bin/ping-uimaas", Memory: gib}
}

// TestRegisterUIMAASService: the head resolves ${DefaultBrokerURL} to
// head.default_broker_url in the endpoint, the DD's endpoint and the
// instances' arguments, and refuses an endpoint other than the DD's with
// both; jobs name the service as DUCC writes it.
func TestRegisterUIMAASService(t *testing.T) {
	const broker = "tcp://broker.example:61616"
	f := newFixture(t, options{scheduler: testScheduler, broker: broker})
	f.node("n1", 8*gib)

	other := uimaasSpec()
	other.Endpoint = "UIMA-AS:other:${DefaultBrokerURL}"
	err := call(t, f.h, wire.MethodServiceRegister, alice, wire.ServiceRegisterRequest{Spec: other}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "service_request_endpoint UIMA-AS:other:"+broker+" does not match the endpoint of process_DD dd.xml: UIMA-AS:TopLevelTaeQueue:"+broker)

	id := f.register(t, alice, uimaasSpec())
	ep := "UIMA-AS:TopLevelTaeQueue:" + broker
	info := f.query(t, strconv.FormatUint(id, 10))
	if info.Endpoint != ep || info.Spec.DDEndpoint != ep || info.Policy == "ping-only" {
		t.Errorf("registered %+v", info)
	}
	if args := info.Spec.Args; args[0] != "-DDefaultBrokerURL="+broker || args[len(args)-1] != ep {
		t.Errorf("the instances' arguments are not resolved: %q", args)
	}

	job := f.submitJob(t, bob, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w",
		ServiceDependency: []string{"UIMA-AS:TopLevelTaeQueue:${DefaultBrokerURL}"}}, Items: []string{"a"}})
	if w := f.work(job); w.Ended() || len(w.Deps) != 1 || w.Deps[0] != ep {
		t.Errorf("the job's dependency: %s %q", w.State, w.Deps)
	}

	// Its command is ducc's JVM for the DD: not modifiable.
	err = call(t, f.h, wire.MethodServiceControl, alice, wire.ServiceControlRequest{Service: ep, Action: wire.SvcModify,
		Spec: wire.ServiceSpec{Executable: "/bin/other"}, Keys: []string{"process_executable"}}, &wire.ServiceInfo{})
	wantErr(t, err, wire.CodeUsage, "deploys process_DD dd.xml", "cannot change")
	var after wire.ServiceInfo
	f.mustCall(t, wire.MethodServiceControl, alice, wire.ServiceControlRequest{Service: ep, Action: wire.SvcModify,
		Spec: wire.ServiceSpec{Instances: 2}, Keys: []string{"instances"}}, &after)
	if after.Spec.Executable != "java" || after.Instances != 2 {
		t.Errorf("after modify --instances 2: %+v", after)
	}
}

// TestRegisterUIMAASWithoutBroker: a cluster without
// head.default_broker_url refuses ${DefaultBrokerURL} and says where to
// set it; a job naming it ends as its services are unavailable.
func TestRegisterUIMAASWithoutBroker(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n1", 8*gib)
	err := call(t, f.h, wire.MethodServiceRegister, alice, wire.ServiceRegisterRequest{Spec: uimaasSpec()}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "this cluster names none", "head.default_broker_url")
	job := f.submitJob(t, bob, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w",
		ServiceDependency: []string{"UIMA-AS:q:${DefaultBrokerURL}"}}, Items: []string{"a"}})
	if w := f.work(job); w.Completion != state.CompletionServicesUnavail {
		t.Errorf("a job naming an unregistered UIMA-AS service: %s %s", w.State, w.Completion)
	}
}
