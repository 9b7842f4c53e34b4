// Package readall reads a stream to its end into a buffer sized up front.
package readall

import "io"

// ReadAll is io.ReadAll starting from a buffer of size bytes, the expected
// length (a Content-Length, a gzip trailer's size). io.ReadAll starts small
// and doubles: a body of a few hundred KiB goes through a dozen
// allocations and copies, and on a virtual machine the fresh pages of each
// cost more than the copy. A wrong size only costs a growth or some slack.
func ReadAll(r io.Reader, size int64) ([]byte, error) {
	return Into(nil, r, size)
}

// Into is ReadAll into buf's memory when buf has room for size bytes.
func Into(buf []byte, r io.Reader, size int64) ([]byte, error) {
	if size < 512 || size > 1<<30 {
		size = 512
	}
	// One byte more, so that the EOF is seen without growing.
	b := buf[:0]
	if int64(cap(b)) < size+1 {
		b = make([]byte, 0, size+1)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
