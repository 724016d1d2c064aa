# pyext.py - Python callers above a native extension's hot path: drive() -> flamedext.crunch (C++,
# tests/workloads/pyext.cpp) for the seconds given, or, with --crypto, cryptography's Rust code
# (x509.load_pem_x509_certificate) under parse_all().
# Usage: python3 pyext.py SECONDS [DIR_OF_flamedext | --crypto]
import sys
import time


def drive(crunch):
    return crunch(40)


def parse_all(load, pem):
    for _ in range(200):
        load(pem).subject.rfc4514_string()


def certificate():
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flamed")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    from cryptography.hazmat.primitives.serialization import Encoding
    return cert.public_bytes(Encoding.PEM)


def main():
    seconds = float(sys.argv[1])
    end = time.monotonic() + seconds
    if len(sys.argv) > 2 and sys.argv[2] == "--crypto":
        from cryptography import x509
        pem = certificate()
        while time.monotonic() < end:
            parse_all(x509.load_pem_x509_certificate, pem)
    else:
        sys.path.insert(0, sys.argv[2])
        import flamedext
        while time.monotonic() < end:
            drive(flamedext.crunch)


main()
