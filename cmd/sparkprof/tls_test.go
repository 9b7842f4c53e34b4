package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// writeCert writes a self-signed certificate for 127.0.0.1 (its own
// authority) and its key as PEM files, and returns the certificate.
func writeCert(t *testing.T, certFile, keyFile string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "sparkprof test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// servedSerial is the serial number of the certificate the server at addr
// presents in a new handshake.
func servedSerial(t *testing.T, addr string) int64 {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestServeTLS serves HTTPS with --tls-cert and --tls-key: uploads and
// queries work for a client that trusts the certificate, the import
// command reaches it with SSL_CERT_FILE, plain HTTP is refused, and a
// renewed certificate is served without a restart while a broken renewal
// keeps the last good one.
func TestServeTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert := writeCert(t, certFile, keyFile, 1)
	bin := buildBinary(t)
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"), "--tls-cert", certFile, "--tls-key", keyFile)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("serve listens on %s, want https", base)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}

	q := url.Values{"name": {"tls{}"}, "format": {"folded"}}
	resp, err := client.Post(base+"/ingest?"+q.Encode(), "text/plain", strings.NewReader("main;work 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload over TLS: %d", resp.StatusCode)
	}

	imp := exec.Command(bin, "import", "--server", base, "--app", "tls-import", corpus.Path(t, "jfr", "dump1.jfr.gz"))
	imp.Env = append(os.Environ(), "SSL_CERT_FILE="+certFile)
	if out, err := imp.CombinedOutput(); err != nil || !strings.Contains(string(out), "imported 1 of 1") {
		t.Errorf("import over TLS: %v\n%s", err, out)
	}
	var apps []string
	resp, err = client.Get(base + "/api/v1/label-values?name=service_name")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&apps)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(apps, ","), "tls") || !strings.Contains(strings.Join(apps, ","), "tls-import") {
		t.Errorf("services %v, want tls and tls-import", apps)
	}

	plain := strings.Replace(base, "https://", "http://", 1)
	if resp, err := http.Get(plain + "/api/v1/apps"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP answered 200 on the TLS port")
		}
	}

	addr := strings.TrimPrefix(base, "https://")
	if got := servedSerial(t, addr); got != 1 {
		t.Fatalf("the server presents serial %d, want 1", got)
	}
	// A renewal: a new pair in place, a later modification time.
	writeCert(t, certFile, keyFile, 2)
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(certFile, later, later)
	os.Chtimes(keyFile, later, later)
	if got := servedSerial(t, addr); got != 2 {
		t.Errorf("after renewal the server presents serial %d, want 2", got)
	}
	// A broken renewal keeps the last good certificate.
	os.WriteFile(certFile, []byte("not a certificate"), 0o644)
	later = later.Add(2 * time.Second)
	os.Chtimes(certFile, later, later)
	if got := servedSerial(t, addr); got != 2 {
		t.Errorf("after a broken renewal the server presents serial %d, want 2", got)
	}
}
