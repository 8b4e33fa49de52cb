#!/usr/bin/env bash
# make_bad_certs.sh DIR — the badssl-style certificates of the fault catalogue's TLS rows
# (tests/fault-coverage.md), made with the openssl CLI at test time: a root, a rogue root, an intermediate
# and one leaf per fault.
# Every leaf names 127.0.0.1 (IP SAN) unless its fault is the name. Writes DIR/.complete last.
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
if command -v flock >/dev/null; then  # concurrent test processes (ctest -j) share one directory
  exec 9>.lock
  flock 9
fi
[[ -f .complete ]] && exit 0

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

cat > ca.cnf <<'EOF'
[ca]
default_ca = d
[d]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = p
unique_subject = no
copy_extensions = none
[p]
commonName = supplied
EOF
: > index.txt
echo 1000 > serial

# root NAME: a self-signed CA
root() {
  key "$1"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 30 -subj "/CN=$1" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}

# sign NAME ISSUER EXTENSIONS [openssl ca date options...]: a certificate for NAME.key signed by ISSUER
sign() {
  local name=$1 issuer=$2 ext=$3
  shift 3
  [[ -f "$name.key" ]] || key "$name"
  openssl req -new -key "$name.key" -out "$name.csr" -subj "/CN=$name" 2>/dev/null
  printf '%b\n' "$ext" > "$name.ext"
  (($#)) || set -- -days 7
  openssl ca -batch -notext -config ca.cnf -cert "$issuer.pem" -keyfile "$issuer.key" -in "$name.csr" \
    -out "$name.pem" -extfile "$name.ext" "$@" 2>/dev/null
}

names='subjectAltName=IP:127.0.0.1,DNS:localhost'
server_ext="basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n$names"

root root
root rogue
sign good root "$server_ext"
sign wronghost root \
  "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:wrong.host.test"
sign expired root "$server_ext" -startdate 20200101000000Z -enddate 20200201000000Z
sign notyet root "$server_ext" -startdate 20991201000000Z -enddate 20991231000000Z
sign badeku root "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n$names"
sign fromrogue rogue "$server_ext"
sign inter root 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign'
sign chained inter "$server_ext"
sign notca good "$server_ext"  # issued by a leaf (CA:FALSE)
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out weak.key 2>/dev/null
sign weak root "$server_ext"
sign client root 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth'
sign rogueclient rogue 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth'
touch .complete
