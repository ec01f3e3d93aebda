package orch

// Peer returns the libp2p peer id of a node this head has heard from.
func (o *Orchestrator) Peer(node string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.nodes[node]
	if n == nil || n.Peer == "" {
		return "", false
	}
	return n.Peer, true
}
