/**
 * AWS's public RSA certificates for the base64-encoded (SHA-256) signature of the EC2 instance
 * identity document (`/latest/dynamic/instance-identity/signature`), as the EC2 User Guide
 * publishes them per Region ("AWS public certificates for instance identity document
 * signatures", regions-certs.html, the "RSA" tab). Data, not code: a Region whose certificate
 * is not listed here is trusted only through REGISTRAR_INSTANCE_IDENTITY_CERTS (the stack's
 * `instanceIdentityCerts` option), which replaces this list.
 *
 * us-east-1: the certificate AWS issued on 2024-04-29 (valid to 2029-04-28, RSA 1024, subject
 * O=Amazon Web Services LLC, L=Seattle, ST=Washington State, C=US; SHA-256 fingerprint
 * 65:02:D1:18:33:53:7B:9C:F0:A6:4D:96:D9:83:CA:76:FE:31:7D:3E:C7:5A:82:E5:94:0C:A0:53:90:EA:A5:9F).
 * It is self-signed, and test/unit/instance-identity-document.test.ts checks that it still
 * verifies its own signature, so a changed byte fails the build.
 */
export interface PublishedCertificate {
  region: string;
  pem: string;
}

export const AWS_INSTANCE_IDENTITY_CERTIFICATES: readonly PublishedCertificate[] = Object.freeze([
  {
    region: 'us-east-1',
    pem: `-----BEGIN CERTIFICATE-----
MIIDITCCAoqgAwIBAgIUE1y2NIKCU+Rg4uu4u32koG9QEYIwDQYJKoZIhvcNAQEL
BQAwXDELMAkGA1UEBhMCVVMxGTAXBgNVBAgTEFdhc2hpbmd0b24gU3RhdGUxEDAO
BgNVBAcTB1NlYXR0bGUxIDAeBgNVBAoTF0FtYXpvbiBXZWIgU2VydmljZXMgTExD
MB4XDTI0MDQyOTE3MzQwMVoXDTI5MDQyODE3MzQwMVowXDELMAkGA1UEBhMCVVMx
GTAXBgNVBAgTEFdhc2hpbmd0b24gU3RhdGUxEDAOBgNVBAcTB1NlYXR0bGUxIDAe
BgNVBAoTF0FtYXpvbiBXZWIgU2VydmljZXMgTExDMIGfMA0GCSqGSIb3DQEBAQUA
A4GNADCBiQKBgQCHvRjf/0kStpJ248khtIaN8qkDN3tkw4VjvA9nvPl2anJO+eIB
UqPfQG09kZlwpWpmyO8bGB2RWqWxCwuB/dcnIob6w420k9WY5C0IIGtDRNauN3ku
vGXkw3HEnF0EjYr0pcyWUvByWY4KswZV42X7Y7XSS13hOIcL6NLA+H94/QIDAQAB
o4HfMIHcMAsGA1UdDwQEAwIHgDAdBgNVHQ4EFgQUJdbMCBXKtvCcWdwUUizvtUF2
UTgwgZkGA1UdIwSBkTCBjoAUJdbMCBXKtvCcWdwUUizvtUF2UTihYKReMFwxCzAJ
BgNVBAYTAlVTMRkwFwYDVQQIExBXYXNoaW5ndG9uIFN0YXRlMRAwDgYDVQQHEwdT
ZWF0dGxlMSAwHgYDVQQKExdBbWF6b24gV2ViIFNlcnZpY2VzIExMQ4IUE1y2NIKC
U+Rg4uu4u32koG9QEYIwEgYDVR0TAQH/BAgwBgEB/wIBADANBgkqhkiG9w0BAQsF
AAOBgQAlxSmwcWnhT4uAeSinJuz+1BTcKhVSWb5jT8pYjQb8ZoZkXXRGb09mvYeU
NeqOBr27rvRAnaQ/9LUQf72+SahDFuS4CMI8nwowytqbmwquqFr4dxA/SDADyRiF
ea1UoMuNHTY49J/1vPomqsVn7mugTp+TbjqCfOJTpu0temHcFA==
-----END CERTIFICATE-----`,
  },
]);
