"""The placement gate: rebuilt pods are created behind the ``repack.volcano.sh/placement``
scheduling gate until their run has nominated a node for them.

``index`` decides (which pod creates are rebuilds of active relocations, and which gates the
leader lifts), ``webhook`` serves the AdmissionReview over HTTPS, ``certs`` keeps its TLS (a CA
and a serving certificate in a Secret, the CA injected into the webhook configuration).
"""
