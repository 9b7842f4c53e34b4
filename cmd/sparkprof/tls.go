package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certReloader serves a certificate and key from files, read again when
// either file's modification time changes, so that a renewed certificate
// (cert-manager, certbot) takes effect without a restart. A renewal that
// cannot be read is logged once, and the last good pair kept.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime [2]time.Time // of the files when last read, well or not
	failed  string       // the last error logged
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// load reads the pair if either file changed since it was last read.
func (r *certReloader) load() error {
	var mt [2]time.Time
	for i, f := range []string{r.certFile, r.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		mt[i] = st.ModTime()
	}
	if mt == r.modTime {
		return nil
	}
	r.modTime = mt
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert %s, --tls-key %s: %w (want PEM files of a certificate and its private key)", r.certFile, r.keyFile, err)
	}
	r.cert = &cert
	return nil
}

// get returns the certificate for a TLS handshake.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		if err.Error() != r.failed {
			r.failed = err.Error()
			r.log.Warn("TLS certificate not reloaded; serving the last one read", "err", err)
		}
	} else {
		r.failed = ""
	}
	return r.cert, nil
}
