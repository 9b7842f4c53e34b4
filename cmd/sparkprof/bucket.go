package main

import (
	"context"
	"fmt"
	"io"

	// The object stores serve --storage opens.
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/sparkprof/sparkprof/store"
	"github.com/sparkprof/sparkprof/store/objstore"
)

// openedBucket is serve's --storage, opened, and its --role.
type openedBucket struct {
	b    objstore.Bucket
	c    io.Closer
	role store.Role
}

func (o openedBucket) close() {
	if o.c != nil {
		o.c.Close()
	}
}

// openBucket opens --storage, if given, checking --role and
// --flush-interval.
func (f *serveFlags) openBucket(ctx context.Context) (openedBucket, error) {
	role, err := store.ParseRole(f.role)
	if err != nil {
		return openedBucket{}, fmt.Errorf("--role: %w", err)
	}
	if f.storage == "" {
		if role != store.RoleAll {
			return openedBucket{}, fmt.Errorf("--role %s needs --storage: nodes share their data through a bucket", f.role)
		}
		return openedBucket{}, nil
	}
	if f.flushInterval <= 0 {
		return openedBucket{}, fmt.Errorf("--flush-interval %s: want a positive duration such as 10s", f.flushInterval)
	}
	b, c, err := objstore.Open(ctx, f.storage)
	if err != nil {
		return openedBucket{}, fmt.Errorf("--storage: %w", err)
	}
	return openedBucket{b: b, c: c, role: role}, nil
}
