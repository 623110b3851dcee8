// Wrapper module that pins age-keygen, which the tests make SOPS age keys with.
module driftless.dev/testbin/age

go 1.26.0

tool filippo.io/age/cmd/age-keygen

require (
	filippo.io/age v1.3.2 // indirect
	filippo.io/hpke v0.4.0 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/term v0.45.0 // indirect
)
