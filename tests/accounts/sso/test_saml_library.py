"""SAML's XML signature library and the XML parser must share one libxml2: python3-saml hands lxml's trees to
xmlsec, and two different libxml2 builds in one process fail at the first signed assertion ("lxml & xmlsec
libxml2 library version mismatch"). The pins in pyproject.toml keep them together; this says when they drift."""

from __future__ import annotations


def test_xmlsec_and_lxml_are_built_on_the_same_libxml2() -> None:
    import lxml.etree
    import xmlsec

    assert xmlsec.get_libxml_version() == lxml.etree.LIBXML_VERSION
