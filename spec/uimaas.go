package spec

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// The placeholders DUCC resolves to the cluster's UIMA-AS broker: DUCC's
// DefaultBrokerURL (its service files write
// UIMA-AS:queue:${DefaultBrokerURL}) and UIMA-AS's own defaultBrokerURL
// (deployment descriptors write brokerURL="${defaultBrokerURL}"). The head
// replaces both by its head.default_broker_url (ResolveBroker).
var brokerPlaceholders = []string{"${DefaultBrokerURL}", "${defaultBrokerURL}"}

// uimaServiceMain is the main class of ducc-uima.jar that deploys a DD
// (java/src/ducc/uima/ServiceMain.java).
const uimaServiceMain = "ducc.uima.ServiceMain"

// UIMAASServiceClasspath is the class path of a UIMA-AS service's JVMs
// after ducc-uima.jar and the user's classpath: Debian's UIMA-AS 2.3.1
// (libuima-as-java) and what it needs, log4j included (ServiceMain logs
// Spring and ActiveMQ through it), as the Makefile's UIMAAS_CP.
// $DUCC_UIMAAS_SERVICE_CLASSPATH replaces it.
const UIMAASServiceClasspath = "/usr/share/java/uimaj-as-core.jar:/usr/share/java/uimaj-as-jms.jar:/usr/share/java/uimaj-as-activemq.jar:" +
	"/usr/share/java/uimaj-core.jar:/usr/share/java/activemq-client.jar:/usr/share/java/geronimo-jms_1.1_spec.jar:" +
	"/usr/share/java/geronimo-j2ee-management-1.1-spec.jar:/usr/share/java/hawtbuf.jar:/usr/share/java/spring3-core.jar:" +
	"/usr/share/java/spring3-beans.jar:/usr/share/java/spring3-context.jar:/usr/share/java/spring3-expression.jar:" +
	"/usr/share/java/spring3-aop.jar:/usr/share/java/spring3-jms.jar:/usr/share/java/spring3-transaction.jar:" +
	"/usr/share/java/commons-logging.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"

// maxDDSize bounds a deployment descriptor ducc reads.
const maxDDSize = 4 << 20

// ResolveBroker replaces ${DefaultBrokerURL} and ${defaultBrokerURL} in
// s by url, the cluster's UIMA-AS broker; with url "" it leaves s alone.
func ResolveBroker(s, url string) string {
	if url == "" {
		return s
	}
	for _, p := range brokerPlaceholders {
		s = strings.ReplaceAll(s, p, url)
	}
	return s
}

// ResolveServiceBroker resolves the broker placeholders (ResolveBroker)
// in what a registration says of endpoints and JVMs: the endpoint, the
// DD's endpoint, the dependencies and the instances' arguments. A UIMA-AS
// endpoint that still holds ${...} afterwards is an error that says how
// to define it.
func ResolveServiceBroker(s *wire.ServiceSpec, url string) error {
	s.Endpoint = ResolveBroker(s.Endpoint, url)
	s.DDEndpoint = ResolveBroker(s.DDEndpoint, url)
	for i := range s.Dependency {
		s.Dependency[i] = ResolveBroker(s.Dependency[i], url)
	}
	for i := range s.Args {
		s.Args[i] = ResolveBroker(s.Args[i], url)
	}
	for _, ep := range append([]string{s.Endpoint, s.DDEndpoint}, s.Dependency...) {
		if !strings.HasPrefix(strings.ToUpper(ep), EndpointUIMAAS+":") || !strings.Contains(ep, "${") {
			continue
		}
		if url == "" && containsBrokerPlaceholder(ep) {
			return fmt.Errorf("%s: ${DefaultBrokerURL} is the cluster's UIMA-AS broker, and this cluster names none: "+
				"an administrator sets head.default_broker_url in the agents' config (docs/configuration.md), or write the broker's url", ep)
		}
		return fmt.Errorf("%s: an undefined ${...} is left in the endpoint; only ${DefaultBrokerURL} is resolved by ducc (define others in the spec file or the environment)", ep)
	}
	return nil
}

// brokerResolved reports whether ${name} in the value of key is a broker
// placeholder the head resolves (ResolveServiceBroker, and a job's
// service_dependency): ParseProperties does not warn that it is left.
func brokerResolved(kind Kind, key, name string) bool {
	switch {
	case key == "service_dependency" && (kind == KindJob || kind == KindService),
		kind == KindService && (key == "service_request_endpoint" || key == "process_jvm_args"):
		return slices.Contains(brokerPlaceholders, "${"+name+"}")
	}
	return false
}

func containsBrokerPlaceholder(s string) bool {
	for _, p := range brokerPlaceholders {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// validateUIMAAS checks what is particular to UIMA-AS services: the
// endpoint a DD declares is the service's (a UIMA-AS endpoint without a
// pinger of its own gets ducc's UIMA-AS pinger).
func validateUIMAAS(s wire.ServiceSpec, kind string) error {
	if s.ProcessDD != "" {
		if kind != EndpointUIMAAS {
			return fmt.Errorf("process_DD deploys a UIMA-AS service: its service_request_endpoint is UIMA-AS:<queue>:<broker-url> as the DD declares (%s), not %s", s.DDEndpoint, s.Endpoint)
		}
		if s.DDEndpoint == "" {
			return fmt.Errorf("process_DD %s: the endpoint its DD declares is missing from the registration; register with ducc services register, which reads the DD", s.ProcessDD)
		}
		// Compared once the head resolved ${DefaultBrokerURL} in both
		// (ResolveServiceBroker); with a placeholder left on either side
		// the CLI cannot tell yet. The kind is compared as ParseEndpoint
		// reads it (uima-as: is UIMA-AS:).
		_, target, _ := ParseEndpoint(s.Endpoint)
		if ep := EndpointUIMAAS + ":" + target; s.DDEndpoint != ep && !strings.Contains(s.Endpoint+s.DDEndpoint, "${") {
			return fmt.Errorf("service_request_endpoint %s does not match the endpoint of process_DD %s: %s (the DD's inputQueue endpoint and brokerURL); they must name the same queue on the same broker",
				s.Endpoint, s.ProcessDD, s.DDEndpoint)
		}
	}
	return nil
}

// ddReader reads a deployment descriptor for buildUIMAAS: the file at an
// absolute path, or what a classpath entry holds under a name.
type ddReader interface {
	readFile(path string) ([]byte, error)
	// readOnClasspath finds name (a/b/C.xml) in the classpath entries:
	// folders, jars, and dir/* for the jars in dir.
	readOnClasspath(entries []string, name string) ([]byte, string, error)
}

// osDDReader reads from the filesystem.
type osDDReader struct{}

func (osDDReader) readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDDSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDDSize {
		return nil, fmt.Errorf("%s is over %d MiB: not a deployment descriptor", path, maxDDSize>>20)
	}
	return data, nil
}

func (r osDDReader) readOnClasspath(entries []string, name string) ([]byte, string, error) {
	for _, e := range entries {
		jars, wildcard, _ := classpathJars(e) // an unreadable folder holds nothing
		switch {
		case wildcard:
		case strings.HasSuffix(strings.ToLower(e), ".jar") || strings.HasSuffix(strings.ToLower(e), ".zip"):
			jars = []string{e}
		default:
			p := filepath.Join(e, filepath.FromSlash(name))
			if data, err := r.readFile(p); err == nil {
				return data, p, nil
			}
		}
		for _, j := range jars {
			if data, err := readZipEntry(j, name); err == nil {
				return data, j + "!/" + name, nil
			}
		}
	}
	return nil, "", fs.ErrNotExist
}

func readZipEntry(jar, name string) ([]byte, error) {
	z, err := zip.OpenReader(jar)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	f, err := z.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDDSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDDSize {
		return nil, fmt.Errorf("%s in %s is over %d MiB", name, jar, maxDDSize>>20)
	}
	return data, nil
}

// uimaasPaths are the class path entries ducc puts around a UIMA-AS
// service's classpath: ducc-uima.jar first (its UIMA-AS version class
// must come before Debian's), UIMA-AS's jars last.
type uimaasPaths struct {
	jar, uimaas string
}

func defaultUIMAASPaths() uimaasPaths {
	p := uimaasPaths{jar: defaultUIMAPaths().jar, uimaas: os.Getenv("DUCC_UIMAAS_SERVICE_CLASSPATH")}
	if p.uimaas == "" {
		p.uimaas = UIMAASServiceClasspath
	}
	return p
}

// buildUIMAAS turns a UIMA-AS service's keys into its command (a JVM
// running ducc.uima.ServiceMain on the DD) and records the endpoint the
// DD declares, as DUCC's CLI does: it reads the DD, from a file (a name
// ending in .xml or with a slash; relative to working_directory, else the
// current directory) or by name on classpath. given are the keys given.
// A service without process_DD must not give the JVM keys.
func buildUIMAAS(s *wire.ServiceSpec, given []string, cwd string, r ddReader, paths func() uimaasPaths) error {
	if s.ProcessDD == "" {
		for _, k := range []string{"classpath", "process_jvm_args", "jvm"} {
			if slices.Contains(given, k) {
				return fmt.Errorf("%s is for UIMA-AS services (it sets up the JVM that deploys process_DD): give process_DD, or put a command's options in process_executable_args", k)
			}
		}
		return nil
	}
	for _, k := range []string{"process_executable", "process_executable_args"} {
		if slices.Contains(given, k) {
			return fmt.Errorf("%s with process_DD: a UIMA-AS service's instances are JVMs that ducc starts to deploy the DD; drop %s (JVM options go in process_jvm_args, jars in classpath)", k, k)
		}
	}
	dir := s.WorkingDirectory
	if dir == "" {
		dir = cwd
	}
	var entries []string
	for _, e := range strings.Split(s.Classpath, ":") {
		if e = strings.TrimSpace(e); e != "" {
			if !filepath.IsAbs(e) {
				e = filepath.Join(dir, e)
			}
			entries = append(entries, e)
		}
	}
	data, where, err := readDD(s.ProcessDD, dir, entries, r)
	if err != nil {
		return err
	}
	queue, broker, err := ParseDD(data)
	if err != nil {
		return fmt.Errorf("process_DD %s (%s): %w", s.ProcessDD, where, err)
	}
	props := jvmProperties(s.JVMArgs)
	ddEP := EndpointUIMAAS + ":" + resolveProps(queue, props) + ":" + resolveProps(broker, props)
	s.DDEndpoint = ddEP
	if s.Endpoint == "" {
		s.Endpoint = ddEP // as DUCC: the DD says where the service listens
	}
	p := paths()
	var cp []string
	for _, e := range []string{p.jar, s.Classpath, p.uimaas} {
		if e = strings.Trim(strings.TrimSpace(e), ":"); e != "" {
			cp = append(cp, e)
		}
	}
	s.Executable = s.JVM
	if s.Executable == "" {
		s.Executable = "java"
	}
	s.Args = append(append([]string{}, s.JVMArgs...), "-cp", strings.Join(cp, ":"), uimaServiceMain, "--dd", s.ProcessDD, "--endpoint", s.Endpoint)
	return nil
}

// readDD finds and reads a DD as DUCC does: a name ending in .xml or with
// a slash is a file (relative to dir), anything else a name on the class
// path (a.b.C is a/b/C.xml), or a file of that name in dir.
func readDD(dd, dir string, classpath []string, r ddReader) (data []byte, where string, err error) {
	isFile := strings.HasSuffix(strings.ToLower(dd), ".xml") || strings.Contains(dd, "/")
	p := dd
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if data, err := r.readFile(p); err == nil {
		return data, p, nil
	} else if isFile {
		return nil, "", fmt.Errorf("process_DD %s: %w (a relative path is relative to working_directory %s)", dd, err, dir)
	}
	name := strings.ReplaceAll(dd, ".", "/") + ".xml"
	data, where, err = r.readOnClasspath(classpath, name)
	if err != nil {
		return nil, "", fmt.Errorf("process_DD %s is neither a file in %s nor found by name on classpath (as %s); give a path ending in .xml or add its jar or folder to classpath", dd, dir, name)
	}
	return data, where, nil
}

// The parts of a UIMA-AS deployment descriptor ducc reads.
type ddXML struct {
	XMLName    xml.Name
	Deployment *struct {
		Service *struct {
			InputQueue *struct {
				Endpoint  string `xml:"endpoint,attr"`
				BrokerURL string `xml:"brokerURL,attr"`
			} `xml:"inputQueue"`
			TopDescriptor *struct {
				Import *struct {
					Location string `xml:"location,attr"`
					Name     string `xml:"name,attr"`
				} `xml:"import"`
			} `xml:"topDescriptor"`
			AnalysisEngine *ddAE `xml:"analysisEngine"`
		} `xml:"service"`
		CasPool *struct {
			NumberOfCASes string `xml:"numberOfCASes,attr"`
		} `xml:"casPool"`
	} `xml:"deployment"`
}

type ddAE struct {
	Key      string `xml:"key,attr"`
	Async    string `xml:"async,attr"`
	Scaleout *struct {
		N string `xml:"numberOfInstances,attr"`
	} `xml:"scaleout"`
	CasMultiplier *struct{} `xml:"casMultiplier"`
	Delegates     *struct {
		Remote []struct {
			Key string `xml:"key,attr"`
		} `xml:"remoteAnalysisEngine"`
	} `xml:"delegates"`
}

// ParseDD reads a UIMA-AS deployment descriptor as ducc deploys it
// (ducc.uima.ServiceMain): it returns its input queue and broker as
// written (with their ${...}; an absent brokerURL is UIMA-AS's default,
// ${defaultBrokerURL}) and refuses what ducc's DD translator does not
// deploy: async aggregates, remote delegates, a top-level CAS multiplier.
func ParseDD(data []byte) (queue, broker string, err error) {
	var d ddXML
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&d); err != nil {
		return "", "", fmt.Errorf("not a UIMA-AS deployment descriptor: %v", err)
	}
	if d.XMLName.Local != "analysisEngineDeploymentDescription" {
		return "", "", fmt.Errorf("a <%s>, not a UIMA-AS <analysisEngineDeploymentDescription>", d.XMLName.Local)
	}
	if d.Deployment == nil || d.Deployment.Service == nil || d.Deployment.Service.InputQueue == nil {
		return "", "", errors.New("no <deployment><service><inputQueue>: the DD does not say which queue the service reads")
	}
	sv := d.Deployment.Service
	queue, broker = strings.TrimSpace(sv.InputQueue.Endpoint), strings.TrimSpace(sv.InputQueue.BrokerURL)
	if queue == "" {
		return "", "", errors.New("<inputQueue> has no endpoint (the queue's name)")
	}
	if broker == "" {
		broker = "${defaultBrokerURL}"
	}
	if strings.ContainsAny(queue, " \t\r\n:") {
		return "", "", fmt.Errorf("<inputQueue> endpoint %q: a queue name has no blanks or colons", queue)
	}
	if sv.TopDescriptor == nil || sv.TopDescriptor.Import == nil || (sv.TopDescriptor.Import.Location == "" && sv.TopDescriptor.Import.Name == "") {
		return "", "", errors.New("no <topDescriptor><import location=... or name=...>: the DD does not say what to deploy")
	}
	if ae := sv.AnalysisEngine; ae != nil {
		switch strings.ToLower(strings.TrimSpace(ae.Async)) {
		case "true", "yes":
			return "", "", errors.New(`an async aggregate (async="true"): ducc deploys a primitive or a synchronous aggregate (async="false", the default); deploy it synchronously, or run the delegates as services of their own`)
		}
		if ae.Delegates != nil && len(ae.Delegates.Remote) > 0 {
			return "", "", fmt.Errorf("a remote delegate (%s): ducc deploys a primitive or a synchronous aggregate; make the delegate local", ae.Delegates.Remote[0].Key)
		}
		if ae.CasMultiplier != nil {
			return "", "", errors.New("a CAS multiplier as the service itself: ducc does not deploy top-level CAS multipliers; put it inside an aggregate")
		}
		if ae.Scaleout != nil && ae.Scaleout.N != "" {
			if n, err := strconv.Atoi(strings.TrimSpace(ae.Scaleout.N)); err != nil || n < 1 {
				return "", "", fmt.Errorf("scaleout numberOfInstances %q is not a whole number of at least 1", ae.Scaleout.N)
			}
		}
	}
	if cp := d.Deployment.CasPool; cp != nil && cp.NumberOfCASes != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(cp.NumberOfCASes)); err != nil || n < 1 {
			return "", "", fmt.Errorf("casPool numberOfCASes %q is not a whole number of at least 1", cp.NumberOfCASes)
		}
	}
	return queue, broker, nil
}

// jvmProperties are the -DNAME=VALUE options of JVM arguments.
func jvmProperties(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		if name, value, ok := strings.Cut(strings.TrimPrefix(a, "-D"), "="); ok && strings.HasPrefix(a, "-D") && name != "" {
			m[name] = value
		}
	}
	return m
}

// resolveProps replaces ${NAME} by props[NAME], once (a value is not
// resolved again); others stay as written.
func resolveProps(s string, props map[string]string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		name := s[i+2 : i+j]
		b.WriteString(s[:i])
		if v, ok := props[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return b.String()
}
