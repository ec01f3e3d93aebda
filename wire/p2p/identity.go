package p2p

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/ducc-project/ducc/wire"
)

// LoadOrCreateIdentity loads the node's Ed25519 private key from path (as
// written by crypto.MarshalPrivateKey), or creates one there (mode 0600,
// parent directory 0700) if the file does not exist.
func LoadOrCreateIdentity(path string) (crypto.PrivKey, error) {
	data, err := wire.ReadKeyFile(path)
	if err == nil {
		key, err := crypto.UnmarshalPrivateKey(data)
		if err != nil {
			return nil, fmt.Errorf("identity key %s is not a valid libp2p private key (remove it to create a new identity): %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("identity key: generate: %w", err)
	}
	data, err = crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("identity key: encode: %w", err)
	}
	created, err := wire.CreateKeyFile(path, data)
	if err != nil {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	if !created { // someone else created it first: use theirs
		return LoadOrCreateIdentity(path)
	}
	return key, nil
}
