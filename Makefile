# ducc — three executables (ARCHITECTURE.md, "Executables"): ducc, the
# command line (the socket client only); duccd, the daemon (agent, head,
# sim, and the command line too), which ducc runs for `ducc agent` and the
# like; ducc-shim, the process shim the agent runs. ducc and ducc-shim are
# static, as packaged: no dynamic loader on every start. They find duccd
# and ducc-shim next to them. `make build` then `make test`.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/ducc
DAEMON_BIN:= bin/duccd
SHIM_BIN  := bin/ducc-shim
# Packages with goroutines and locks run under the race detector (and
# only there: running them twice cost a minute of make test); the others,
# e2e included, run once without it.
RACE_PKGS  := ./wire/... ./head/... ./agent/... ./feed/... ./proc/... ./cgroup/... ./cmd/internal/sockhttp/
OTHER_PKGS  = $(shell $(GO) list ./... | grep -v -E '/ducc/(wire|head|agent|feed|proc|cgroup|cmd/internal/sockhttp)(/|$$)')

include Makefile.ops

.PHONY: build test test-short e2e vet staticcheck bench bench-e2e fuzz dev demo clean java java-test

# build also builds dist/ducc-uima.jar, which UIMA jobs run (`ducc
# submit` finds it beside bin/), whenever a JDK and Debian's UIMA are
# there, and says so when they are not: ducc then refuses UIMA jobs.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ducc
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DAEMON_BIN) ./cmd/duccd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(SHIM_BIN) ./cmd/ducc-shim
	@if command -v $(JAVAC) >/dev/null 2>&1 && command -v $(JAR) >/dev/null 2>&1 && [ -f $(UIMA_CP) ]; then \
		$(MAKE) --no-print-directory java; \
	else \
		echo "make build: dist/ducc-uima.jar not built (no javac, jar or $(UIMA_CP)): ducc refuses UIMA jobs until it is; install a JDK and UIMA (Debian: apt install default-jdk-headless libuima-core-java), then make java"; \
	fi

# Every test: unit, race, and the end-to-end tests in e2e/ that start the
# real binary. Run as root for cgroups, test users and network namespaces
# (CI does).
test: build vet staticcheck
	$(GO) test -count=1 -timeout 14m $(OTHER_PKGS)
	$(GO) test -count=1 -race -timeout 12m $(RACE_PKGS)

# The multi-node harness alone: five agents in network namespaces (root;
# also part of make test).
e2e: build
	$(GO) test -count=1 -v -run 'TestMultiNode' ./e2e/

test-short:
	$(GO) test -short -count=1 ./...

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

STATICCHECK_VERSION := v0.8.2
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin

# staticcheck, installed (pinned) on first use.
staticcheck:
	@test -x $(GOBIN_DIR)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN_DIR)/staticcheck ./...

# Micro benchmarks, then the end-to-end ones against a dev cluster.
bench: build
	$(GO) test -run XXX -bench . -benchtime 3x ./head/rm/
	$(GO) test -run XXX -bench . ./wire/...
	$(GO) test -run XXX -bench . -benchtime 30x ./proc/
	$(GO) test -run XXX -bench RunTrue -benchtime 40x ./e2e/
	$(GO) test -run XXX -bench Job -benchtime 1x ./e2e/

# The ducc side of the comparison with Slurm (docs/performance.md): 500
# short jobs end to end with the agent's CPU per job, `ducc run -- true`
# and `ducc run --detach -- true` latency, 100,000 items through a trivial
# Python worker, idle CPU and RSS of a fresh dev agent (60 s). Root; not
# part of make test.
bench-e2e: build
	$(GO) test -count=1 -timeout 30m -run XXX -bench 'ShortJobs500|JobStream100k|Idle|RetentionRSS' -benchtime 1x ./e2e/
	$(GO) test -count=1 -timeout 10m -run XXX -bench 'RunTrue|SubmitDetach' -benchtime 40x ./e2e/
	$(GO) test -count=1 -timeout 60m -run XXX -bench 'FlatWithHistory' -benchtime 1x ./e2e/

# Fuzz every decoder and parser of user input, 20 s each.
fuzz:
	for p in ./wire/ ./spec/ ./units/ ./classfile/ ./head/rm/ ./agent/ ./feed/ ./proc/ ./cmd/internal/sockhttp/ ./gpu/; do \
		for f in $$($(GO) test -list 'Fuzz.*' $$p | grep ^Fuzz); do \
			$(GO) test -run XXX -fuzz "^$$f$$" -fuzztime 20s $$p || exit 1; done; done

# Start a throw-away dev cluster, run something on it, show it, stop it.
demo: build
	./scripts/demo.sh

# A one-node dev cluster in the foreground (Ctrl-C stops it).
dev: build
	./$(BIN) agent --dev

clean:
	rm -rf bin dist/java dist/ducc-uima.jar dist/ducc-uima-test.jar dist/ducc-pinger*.jar

# The Java side of UIMA jobs (docs/jobs.md, "UIMA jobs"): javac and jar
# only, against Debian's UIMA (apt-get install default-jdk-headless
# libuima-core-java). dist/ducc-uima.jar is what the packages ship;
# dist/ducc-uima-test.jar holds the test reader, annotators and
# descriptors the end-to-end tests use.
JAVAC         ?= javac
JAR           ?= jar
UIMA_CP       ?= /usr/share/java/uimaj-core.jar
# UIMA-AS services (docs/services.md, "UIMA-AS services"): ServiceMain and
# its DD translator compile against Debian's UIMA-AS 2.3.1, its ActiveMQ
# client, Spring and log4j (apt-get install libuima-as-java); the same
# jars, in this order, are spec.UIMAASServiceClasspath, a UIMA-AS
# service's class path after ducc-uima.jar and the user's classpath.
J             := /usr/share/java
# javac needs only UIMA-AS, JMS and log4j (the others' manifests name jars
# Debian does not ship, which -Xlint:path would flag).
UIMAAS_JAVAC_CP ?= $(J)/uimaj-as-core.jar:$(J)/uimaj-as-jms.jar:$(J)/uimaj-as-activemq.jar:$(J)/geronimo-jms_1.1_spec.jar:$(J)/log4j-1.2.jar
UIMAAS_CP     ?= $(J)/uimaj-as-core.jar:$(J)/uimaj-as-jms.jar:$(J)/uimaj-as-activemq.jar:$(J)/uimaj-core.jar:$(J)/activemq-client.jar:$(J)/geronimo-jms_1.1_spec.jar:$(J)/geronimo-j2ee-management-1.1-spec.jar:$(J)/hawtbuf.jar:$(J)/spring3-core.jar:$(J)/spring3-beans.jar:$(J)/spring3-context.jar:$(J)/spring3-expression.jar:$(J)/spring3-aop.jar:$(J)/spring3-jms.jar:$(J)/spring3-transaction.jar:$(J)/commons-logging.jar:$(J)/slf4j-api.jar:$(J)/slf4j-log4j12.jar:$(J)/log4j-1.2.jar
JAVA_SRC      := $(shell find java/src -name '*.java' 2>/dev/null | sort)
JAVA_TEST_SRC := $(shell find java/test/src -name '*.java' 2>/dev/null | sort)
JAVA_TEST_RES := $(shell find java/test/resources -type f 2>/dev/null | sort)

java: dist/ducc-uima.jar

# The class path of UIMA-AS's jars (examples/uima-as/words.service).
.PHONY: print-uimaas-cp
print-uimaas-cp:
	@echo $(UIMAAS_CP)

java-test: dist/ducc-uima.jar dist/ducc-uima-test.jar

dist/ducc-uima.jar: $(JAVA_SRC)
	rm -rf dist/java/main && mkdir -p dist/java/main
	$(JAVAC) --release 17 -Xlint:all -Werror -cp $(UIMA_CP):$(UIMAAS_JAVAC_CP) -d dist/java/main $(JAVA_SRC)
	$(JAR) --create --file $@ -C dist/java/main .

dist/ducc-uima-test.jar: dist/ducc-uima.jar $(JAVA_TEST_SRC) $(JAVA_TEST_RES)
	rm -rf dist/java/test && mkdir -p dist/java/test
	$(JAVAC) --release 17 -Xlint:all -Werror -cp $(UIMA_CP):dist/ducc-uima.jar:$(UIMAAS_JAVAC_CP) -d dist/java/test $(JAVA_TEST_SRC)
	cp -r java/test/resources/. dist/java/test/
	$(JAR) --create --file $@ -C dist/java/test .

# DUCC's Java pinger API (docs: java/pinger/README.md): the classes custom
# pingers compile against (dist/ducc-pinger-api.jar: AServicePing,
# ServiceStatistics, IServiceStatistics, DuccLogger) and the host that runs
# one as a ducc custom pinger (dist/ducc-pinger.jar: the API plus
# ducc.pinger.PingerHost, its Main-Class). JDK only, no UIMA needed.
# java-pinger-test compiles the fixtures (DUCC's CustomPing sample, a
# loopback stats server, pingers that throw or hang) and runs
# java/pinger/test/run.sh against them.
#
# java-pinger-uimaas builds ducc's default UIMA-AS pinger
# (org.apache.uima.ducc.sm.UimaAsPing, dist/ducc-pinger-uimaas.jar) against
# Debian's UIMA-AS client (libuima-as-java); the head runs it for UIMA-AS:
# endpoints with that class path (spec.DefaultUIMAASClasspath).
.PHONY: java-pinger java-pinger-test java-pinger-uimaas
PINGER_API_SRC    := $(shell find java/pinger/src/org -name '*.java' 2>/dev/null | sort)
PINGER_HOST_SRC   := $(shell find java/pinger/src/ducc -name '*.java' 2>/dev/null | sort)
# The host reads its state line with ducc-uima.jar's JSON reader, compiled in.
PINGER_HOST_SRC   += java/src/ducc/uima/Json.java
PINGER_TEST_SRC   := $(shell find java/pinger/test/src -name '*.java' 2>/dev/null | sort)
PINGER_UIMAAS_SRC := $(shell find java/pinger/uimaas/src -name '*.java' 2>/dev/null | sort)
UIMAAS_JARS       := /usr/share/java/uimaj-as-core.jar:/usr/share/java/uimaj-as-jms.jar:/usr/share/java/uimaj-as-activemq.jar:/usr/share/java/uimaj-core.jar:/usr/share/java/activemq-client.jar:/usr/share/java/geronimo-jms_1.1_spec.jar

java-pinger: dist/ducc-pinger-api.jar dist/ducc-pinger.jar

java-pinger-uimaas: dist/ducc-pinger-uimaas.jar

dist/ducc-pinger-uimaas.jar: dist/ducc-pinger-api.jar $(PINGER_UIMAAS_SRC)
	rm -rf dist/java/pinger-uimaas && mkdir -p dist/java/pinger-uimaas
	$(JAVAC) --release 17 -Xlint:all -Werror -cp dist/ducc-pinger-api.jar:$(UIMAAS_JARS) -d dist/java/pinger-uimaas $(PINGER_UIMAAS_SRC)
	$(JAR) --create --file $@ -C dist/java/pinger-uimaas .

java-pinger-test: dist/ducc-pinger.jar dist/ducc-pinger-test.jar
	java/pinger/test/run.sh dist/ducc-pinger.jar dist/ducc-pinger-test.jar

dist/ducc-pinger-api.jar: $(PINGER_API_SRC)
	rm -rf dist/java/pinger-api && mkdir -p dist/java/pinger-api
	$(JAVAC) --release 17 -Xlint:all -Werror -d dist/java/pinger-api $(PINGER_API_SRC)
	$(JAR) --create --file $@ -C dist/java/pinger-api .

dist/ducc-pinger.jar: $(PINGER_API_SRC) $(PINGER_HOST_SRC)
	rm -rf dist/java/pinger && mkdir -p dist/java/pinger
	$(JAVAC) --release 17 -Xlint:all -Werror -d dist/java/pinger $(PINGER_API_SRC) $(PINGER_HOST_SRC)
	$(JAR) --create --file $@ --main-class ducc.pinger.PingerHost -C dist/java/pinger .

dist/ducc-pinger-test.jar: dist/ducc-pinger-api.jar $(PINGER_TEST_SRC)
	rm -rf dist/java/pinger-test && mkdir -p dist/java/pinger-test
	$(JAVAC) --release 17 -Xlint:all -Werror -cp dist/ducc-pinger-api.jar -d dist/java/pinger-test $(PINGER_TEST_SRC)
	$(JAR) --create --file $@ -C dist/java/pinger-test .

# Simulated cluster: a real head and 1,000 fake agents (docs/performance.md).
.PHONY: sim
sim: build
	./$(BIN) sim --nodes 1000 --duration 10s
