// Package artifacts holds the rules of the server's artifact links and
// pictures, apart from its handlers: the signing key and the signature of
// a picture's URL (the signature is the permission to fetch it), which
// turn an artifact id names, which picture an artifact has and under
// which suffix, and a cache of drawn pictures.
package artifacts
