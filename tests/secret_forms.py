"""Secrets in the forms they take in error text, for the redaction tests of every boundary.

Values follow each issuer's documented format (AWS's own example key pair among them); none
is a live credential.
"""

from __future__ import annotations

AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#: an STS session token's documented opening (``IQoJb3JpZ2luX2Vj``: "origin_ec"), then filler
AWS_SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEtokenAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
#: an Azure OpenAI resource key (32 hex digits; no shape of its own: masked when labelled)
AZURE_OPENAI_KEY = "0123456789abcdef0123456789abcdef"
GITHUB = "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"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
AZURE_STORAGE = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
KEY_BODY = "MIIEpAIBAAKCAQEAx7Kd3vQ9mP2sLr8Zt"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\nq0Wc4nYb1==\n-----END RSA PRIVATE KEY-----"

#: (what an error may say, the secret in it, a word around it that must stay readable)
FORMS: list[tuple[str, str, str]] = [
    (f"InvalidClientTokenId: key id {AWS_KEY_ID} is not valid", AWS_KEY_ID, "not valid"),
    ("ExpiredToken: session ASIAY34FZKBOKMUTVV7A expired", "ASIAY34FZKBOKMUTVV7A", "expired"),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_access_key"),
    (f"AWS_SECRET_ACCESS_KEY: {AWS_SECRET}", AWS_SECRET, "AWS_SECRET_ACCESS_KEY"),
    (f'{{"AccessKeyId": "{AWS_KEY_ID}", "SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET, "Id"),
    (f"ExpiredToken: session token {AWS_SESSION_TOKEN} expired", AWS_SESSION_TOKEN, "expired"),
    (f"X-Amz-Security-Token: {AWS_SESSION_TOKEN}", AWS_SESSION_TOKEN, "X-Amz-Security-Token"),
    (f"GET /x?X-Amz-Security-Token={AWS_SESSION_TOKEN}&a=1 403", AWS_SESSION_TOKEN, "403"),
    ("bedrock key ABSKQmVkcm9ja0FQSUtleS1leGFtcGxlMDEyMzQ1Njc4OQ== denied", "QmVkcm9ja", "denied"),
    (f"api-key: {AZURE_OPENAI_KEY}", AZURE_OPENAI_KEY, "api-key"),
    (f"AZURE_OPENAI_API_KEY={AZURE_OPENAI_KEY} rejected", AZURE_OPENAI_KEY, "AZURE_OPENAI"),
    (f"Ocp-Apim-Subscription-Key: {AZURE_OPENAI_KEY}", AZURE_OPENAI_KEY, "Ocp-Apim"),
    (f"Entra ID token {JWT} rejected by the resource", JWT.split(".")[2], "by the resource"),
    ("API key AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe invalid", "DaGmWKa4JsXZ", "invalid"),
    ("OAuth ya29.a0AfH6SMBx3lVq4Yz9kR2mN8pQ7wT5uE1oI6 expired", "a0AfH6SMBx3lVq4", "expired"),
    ("client GOCSPX-1mVwFTjGIXgs2BC2uHzksQi0HAK denied", "1mVwFTjGIXgs2BC2", "denied"),
    ("AADSTS7000215: secret abc8Q~Xy1zAbCdEfGhIjKlMnOpQrStUvWxYz0123 bad", "Xy1zAbCdEf", "bad"),
    (f"AccountName=acct;AccountKey={AZURE_STORAGE}", AZURE_STORAGE, "AccountName=acct"),
    (f"Endpoint=sb://ns/;SharedAccessKey={AZURE_STORAGE}", AZURE_STORAGE, "Endpoint"),
    (f"remote: Invalid credentials ({GITHUB}) for github.com", GITHUB, "for github.com"),
    (
        "auth github_pat_11ABCDEFG0123456789abc_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqr",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "auth",
    ),
    ("gitlab glpat-Zx8kq2LmN4pR7sT1vW3y revoked", "Zx8kq2LmN4pR7sT1vW3y", "revoked"),
    (f"slack_sdk: invalid_auth for {SLACK}", SLACK, "invalid_auth"),
    ("POST https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX 404", "XXXXXXXX", "404"),
    (f"401 Unauthorized: {JWT} has expired", JWT.split(".")[2], "has expired"),
    (f"401 Unauthorized: {JWT} has expired", JWT.split(".")[1], "401 Unauthorized"),
    ("Authorization: Bearer d1e2a3d4b5e6e7f8", "d1e2a3d4b5e6e7f8", "Authorization"),
    ('{"Authorization": "Bearer d1e2a3d4b5e6e7f8"}', "d1e2a3d4b5e6e7f8", "Authorization"),
    ("https://api.telegram.org/bot1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/x", "AAHdq", "x"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", "stripe"),
    ("npm npm_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz", "npm"),
    (f"could not load key:\n{PEM}\nafter it", KEY_BODY, "after it"),
    ('{"private_key": "' + PEM.replace("\n", "\\n") + '\\n", "n": 1}', KEY_BODY, '"n": 1'),
    (f"key file cut short: {PEM[:70]}", KEY_BODY, "cut short"),
]
