// Package testredis runs a real redis-server (or valkey-server) on a free
// loopback port for tests, with a temporary directory and no persistence.
//
// Without the binary, Start skips the test with a message that says what
// to install, except under CI (the CI environment variable is set), where
// it fails: CI must run the Redis tests.
package testredis

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testport"
)

// Server is a redis-server process.
type Server struct {
	// Addr is host:port; URL is redis://Addr.
	Addr, URL string

	t    testing.TB
	bin  string
	dir  string
	port int
	args []string
	tls  *tls.Config // for PING over TLS (StartTLS)

	// TLS is the client configuration that trusts the server of StartTLS;
	// nil otherwise.
	TLS *tls.Config
	mu  sync.Mutex
	cmd *exec.Cmd
}

// Binary returns the path of redis-server (or valkey-server), or "" when
// neither is installed.
func Binary() string {
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// require stops the test when bin, a program it needs, was not found:
// it fails under CI (which installs it) and is skipped elsewhere, saying
// what is missing.
func require(t testing.TB, bin, msg string) {
	t.Helper()
	if bin != "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Start starts a server that is stopped when the test ends. args are
// extra redis-server options, such as "--requirepass", "secret".
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := Binary()
	require(t, bin, "redis-server not found: install it to run the Redis tests (Debian/Ubuntu: apt-get install -y redis-server; .ci/run does)")
	port := freePort(t, slices.Contains(args, "--cluster-enabled"))
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: port, args: args}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.URL = "redis://" + s.Addr
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// freePort returns a port for a server (testport: never one handed out
// before in this process, to this package or another); for a cluster
// node, one whose cluster bus port (port + 10000) was free too, since a
// node that cannot bind its bus port aborts.
func freePort(t testing.TB, cluster bool) int {
	if cluster {
		return testport.FreeWith(t, 10000)
	}
	return testport.Free(t)
}

// StartTLS starts a server that speaks TLS only, with a certificate for
// 127.0.0.1 made for the test; URL is rediss://, and TLS trusts it.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testredis"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	port := freePort(t, false)
	clientTLS := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	bin := Binary()
	if bin == "" {
		return Start(t) // skips or fails with the message
	}
	s := &Server{t: t, bin: bin, dir: dir, port: 0, tls: clientTLS, TLS: clientTLS,
		args: []string{"--tls-port", fmt.Sprint(port), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", certFile, "--tls-auth-clients", "no"}}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.URL = "rediss://" + s.Addr
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the process again on the same port (after Stop).
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, "--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--protected-mode", "no", "--loglevel", "warning")
	cmd.Args = append(cmd.Args, s.args...)
	logf, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("testredis: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s.ping() == nil {
			return
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.t.Fatalf("testredis: %s did not answer PING on %s within 10s; its log:\n%s", s.bin, s.Addr, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the process (a crash, as far as clients can tell).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// ping sends PING in the RESP protocol and reads +PONG.
func (s *Server) ping() error {
	var c net.Conn
	var err error
	if s.tls != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", s.Addr, s.tls)
	} else {
		c, err = net.DialTimeout("tcp", s.Addr, time.Second)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Cluster is a Redis Cluster (or Valkey cluster) on loopback ports: its
// primaries, each with its replicas, made with redis-cli --cluster create.
type Cluster struct {
	// Nodes are the servers, primaries first as created; a failover
	// changes which is which (Primaries says).
	Nodes []*Server
	// URL is the go-redis cluster URL of the primaries as created:
	// redis://first?addr=second&addr=third.
	URL string

	t   testing.TB
	cli string
}

// CLIBinary returns the path of redis-cli (or valkey-cli), or "".
func CLIBinary() string {
	for _, name := range []string{"redis-cli", "valkey-cli"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// StartCluster starts primaries servers in cluster mode, and replicas
// replicas of each, joins them into one cluster with every slot covered,
// and waits until every node says the cluster is ok. Nodes time out after
// 1 s (cluster-node-timeout), so that a killed primary's replica takes
// over within a few seconds whatever its data's age (a validity factor of
// 0); the cluster keeps serving the slots it still covers meanwhile
// (cluster-require-full-coverage no). It returns once every replica has
// synced, and is stopped when the test ends.
func StartCluster(t testing.TB, primaries, replicas int) *Cluster {
	t.Helper()
	cli := CLIBinary()
	require(t, cli, "redis-cli not found: install it to run the Redis Cluster tests (Debian/Ubuntu: apt-get install -y redis-tools; .ci/run does)")
	c := &Cluster{t: t, cli: cli}
	n := primaries * (1 + replicas)
	args := []string{"--cluster", "create"}
	for range n {
		s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
			"--cluster-allow-reads-when-down", "no", "--cluster-replica-validity-factor", "0")
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", fmt.Sprint(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("testredis: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.URL = "redis://" + c.Nodes[0].Addr
	for i, s := range c.Nodes[1:primaries] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		c.URL += sep + "addr=" + s.Addr
	}
	c.WaitOK(30 * time.Second)
	c.WaitReplicas(30 * time.Second)
	return c
}

// WaitReplicas waits until every running replica has synced with its
// primary (master_link_status:up), so that a primary killed next has a
// replica ready to take over.
func (c *Cluster) WaitReplicas(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for _, s := range c.Nodes {
		for s.Running() {
			out, err := c.Cmd(s, "info", "replication")
			if err == nil && (strings.Contains(out, "role:master") || strings.Contains(out, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("testredis: replica %s did not sync within %s:\n%s", s.Addr, within, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Cmd runs redis-cli against node s and returns its output.
func (c *Cluster) Cmd(s *Server, args ...string) (string, error) {
	host, port, _ := net.SplitHostPort(s.Addr)
	out, err := exec.Command(c.cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// WaitOK waits until every running node reports cluster_state:ok and
// knows a primary for every slot.
func (c *Cluster) WaitOK(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok := true
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			out, err := c.Cmd(s, "cluster", "info")
			if err != nil || !strings.Contains(out, "cluster_state:ok") || !strings.Contains(out, "cluster_slots_ok:16384") {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			out, _ := c.Cmd(c.Nodes[0], "cluster", "nodes")
			c.t.Fatalf("testredis: the cluster was not ok within %s; cluster nodes:\n%s", within, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PrimaryOf returns the running node that serves key's slot as primary,
// as the running nodes see it (nil when none does).
func (c *Cluster) PrimaryOf(key string) *Server {
	c.t.Helper()
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		out, err := c.Cmd(s, "cluster", "keyslot", key)
		if err != nil {
			continue
		}
		var slot int
		fmt.Sscan(out, &slot)
		nodes, err := c.Cmd(s, "cluster", "nodes")
		if err != nil {
			continue
		}
		for line := range strings.Lines(nodes) {
			f := strings.Fields(line)
			if len(f) < 8 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			addr := strings.SplitN(f[1], "@", 2)[0]
			for _, r := range f[8:] {
				lo, hi, found := strings.Cut(r, "-")
				var a, b int
				fmt.Sscan(lo, &a)
				b = a
				if found {
					fmt.Sscan(hi, &b)
				}
				if slot >= a && slot <= b {
					for _, n := range c.Nodes {
						if n.Addr == addr && n.Running() {
							return n
						}
					}
				}
			}
		}
		return nil
	}
	return nil
}

// Primaries returns the running nodes that are primaries with slots.
func (c *Cluster) Primaries() []*Server {
	c.t.Helper()
	var out []*Server
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		if info, err := c.Cmd(s, "role"); err == nil && strings.HasPrefix(info, "master") {
			out = append(out, s)
		}
	}
	return out
}

// Running reports whether the process is up (not Stopped).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Log returns the server's log so far, for a test's failure message.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}
