package objstore

import "testing"

// TestBucketURL: a cloud store's path becomes the prefix objects are kept
// under, a local directory skips gocloud's attribute files, S3 checks
// responses only where the operation requires it, and what the URL says
// itself wins.
func TestBucketURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"s3://bucket/team/profiles", "s3://bucket?prefix=team%2Fprofiles%2F&response_checksum_validation=when_required"},
		{"s3://bucket?prefix=p/&response_checksum_validation=when_supported", "s3://bucket?prefix=p%2F&response_checksum_validation=when_supported"},
		{"gs://bucket/p", "gs://bucket?prefix=p%2F"},
		{"azblob://container", "azblob://container"},
		{"file:///var/lib/sparkprof", "file:///var/lib/sparkprof?metadata=skip"},
		{"file:///d?metadata=write", "file:///d?metadata=write"},
	} {
		if got := bucketURL(tc.in); got != tc.want {
			t.Errorf("bucketURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRedactURL: an error names the bucket without the query, which may
// hold credentials.
func TestRedactURL(t *testing.T) {
	if got := redactURL("s3://bucket?endpoint=x&secret=y"); got != "s3://bucket" {
		t.Errorf("redactURL = %q", got)
	}
}
