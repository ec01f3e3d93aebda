// Package packaging holds the files the .deb and .rpm packages ship: the
// nfpm configuration, the ducc-agent.service systemd unit, the default
// /etc/ducc/ducc.yaml and the install scripts. Its Go code only tests that
// those files are what the agent expects.
package packaging
