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
	"strings"
	"sync"
	"testing"
	"time"
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

// Start starts a server that is stopped when the test ends. args are
// extra redis-server options, such as "--requirepass", "secret".
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		msg := "redis-server not found: install it to run the Redis tests (Debian/Ubuntu: apt-get install -y redis-server; .ci/run does)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: port, args: args}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.URL = "redis://" + s.Addr
	s.Restart()
	t.Cleanup(s.Stop)
	return s
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
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
