// Package objstore is the object storage a store keeps its durable tier
// in: the Bucket interface, one implementation over gocloud's buckets, and
// the errors a store tells apart.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Bucket is the object storage a store keeps its durable tier in: the
// head segments nodes ship, the blocks a compactor writes and the
// compactor's lease (docs/storage-format.md, "Object storage"). Names are
// slash-separated keys relative to the store's prefix.
type Bucket interface {
	// List returns the objects whose names start with prefix, in name order.
	List(ctx context.Context, prefix string) ([]Object, error)
	// ReadAll returns an object's bytes; an object that does not exist is
	// an error wrapping ErrNotExist.
	ReadAll(ctx context.Context, name string) ([]byte, error)
	// ReadAt fills p with the object's bytes from offset off: one ranged
	// read.
	ReadAt(ctx context.Context, name string, p []byte, off int64) error
	// Write stores data as the object name. With ifNotExist, it fails with
	// an error wrapping ErrExists when the object exists, atomically: of
	// two writers of a new name, one fails.
	Write(ctx context.Context, name string, data []byte, ifNotExist bool) error
	// Delete removes an object; one that does not exist is no error.
	Delete(ctx context.Context, name string) error
}

// Object is an object a Bucket lists.
type Object struct {
	Name string
	Size int64
}

// ErrNotExist and ErrExists are the errors of a read of an object that
// does not exist and of a conditional write of one that does.
var (
	ErrNotExist = errors.New("object does not exist")
	ErrExists   = errors.New("object exists already")
)

// Open opens the bucket a URL names (s3://, gs://, azblob://,
// file:///...; the drivers of the schemes used must be linked in) and
// returns it as a Bucket. Its objects are read and written under the
// URL's prefix parameter, if any.
func Open(ctx context.Context, url string) (Bucket, io.Closer, error) {
	url = bucketURL(url)
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("open bucket %s: %w", redactURL(url), err)
	}
	return New(b), b, nil
}

// bucketURL returns url with its path after the bucket made the prefix
// objects are kept under, for the cloud stores (s3://bucket/prefix), and
// a local directory's without the attribute files gocloud writes beside
// each object, which the store does not use and which a reader racing
// their rewrite could find half written. S3's responses are checked by
// the SDK only when the operation requires it: blocks and segments carry
// checksums of their own, and an S3-compatible store that sends none
// would have the SDK log a line to stderr for every read.
func bucketURL(url string) string {
	u, err := neturl.Parse(url)
	if err != nil {
		return url // blob.OpenBucket names the error
	}
	q := u.Query()
	switch u.Scheme {
	case "file":
		if !q.Has("metadata") {
			q.Set("metadata", "skip")
		}
	case "s3", "gs", "azblob":
		if p := strings.Trim(u.Path, "/"); p != "" && !q.Has("prefix") {
			q.Set("prefix", p+"/")
			u.Path = ""
		}
		if u.Scheme == "s3" && !q.Has("response_checksum_validation") {
			q.Set("response_checksum_validation", "when_required")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// redactURL cuts a bucket URL's query, which may name credentials, for
// messages.
func redactURL(url string) string {
	if i := strings.IndexByte(url, '?'); i >= 0 {
		return url[:i]
	}
	return url
}

// New returns a Bucket over a gocloud.dev bucket.
func New(b *blob.Bucket) Bucket { return gocloudBucket{b} }

type gocloudBucket struct{ b *blob.Bucket }

func (g gocloudBucket) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	it := g.b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", prefix, err)
		}
		if !o.IsDir {
			out = append(out, Object{Name: o.Key, Size: o.Size})
		}
	}
}

func (g gocloudBucket) ReadAll(ctx context.Context, name string) ([]byte, error) {
	data, err := g.b.ReadAll(ctx, name)
	return data, wrapObjectErr("read", name, err)
}

func (g gocloudBucket) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	r, err := g.b.NewRangeReader(ctx, name, off, int64(len(p)), nil)
	if err != nil {
		return wrapObjectErr("read", name, err)
	}
	defer r.Close()
	if _, err := io.ReadFull(r, p); err != nil {
		return fmt.Errorf("read %s at %d (%d bytes): %w", name, off, len(p), err)
	}
	return nil
}

func (g gocloudBucket) Write(ctx context.Context, name string, data []byte, ifNotExist bool) error {
	return wrapObjectErr("write", name, g.b.WriteAll(ctx, name, data, &blob.WriterOptions{IfNotExist: ifNotExist}))
}

func (g gocloudBucket) Delete(ctx context.Context, name string) error {
	err := g.b.Delete(ctx, name)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return wrapObjectErr("delete", name, err)
}

// wrapObjectErr names the object and operation of err, wrapping
// ErrNotExist or ErrExists where gocloud's code says so.
func wrapObjectErr(op, name string, err error) error {
	switch gcerrors.Code(err) {
	case gcerrors.OK:
		return nil
	case gcerrors.NotFound:
		return fmt.Errorf("%s %s: %w", op, name, ErrNotExist)
	case gcerrors.FailedPrecondition:
		return fmt.Errorf("%s %s: %w", op, name, ErrExists)
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}

// Timeout bounds one request to a bucket.
const Timeout = 30 * time.Second

// Reader reads an object by ranges, as an io.ReaderAt: a block in a
// bucket, which a query reads as it reads a block file.
type Reader struct {
	Bucket Bucket
	Name   string // the object's name
	Size   int64  // the object's size
}

func (r Reader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.Size {
		return 0, io.EOF
	}
	n := len(p)
	if rest := r.Size - off; int64(n) > rest {
		n = int(rest)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := r.Bucket.ReadAt(ctx, r.Name, p[:n], off); err != nil {
		return 0, &UnreachableError{Object: r.Name, Err: err}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close releases nothing: a Reader holds no resource.
func (Reader) Close() error { return nil }

// UnreachableError is the error of reading an object of the bucket that
// failed: the bucket is down, or the object went away. A query skips the
// block and names it among those it could not read.
type UnreachableError struct {
	Object string // the object's name in the bucket
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("bucket object %s could not be read: %v", e.Object, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }
