// Package sm is the Service Manager (docs/services.md): it decides, from the
// durable state of registered services, the work that references them and
// the soft results of their pingers, which service instances should run,
// which references start and stop services, when work waiting for services
// may go on, and what each service's state is. Decide is a pure function
// of its Input (time is injected); Manager runs it on the head at every
// scheduling cycle, applies its commands through Raft and runs the pingers
// in goroutines it owns: built-in TCP and HTTP pingers in the head itself,
// custom pinger commands on an agent (Config.RunPinger: the node of one of
// the service's running instances, else the head's own node), which starts
// them through proc as the service's owner in a memory-capped cgroup. A
// Java pinger (service_ping_class, a registered pinger, or ducc's UIMA-AS
// pinger for UIMA-AS: endpoints) is such a command: a JVM running ducc's
// pinger host (javapinger.go). The head never forks.
package sm
