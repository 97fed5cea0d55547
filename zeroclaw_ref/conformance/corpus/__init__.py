"""The fixture corpus as installed package data ([TX-CORPUS-01]).

setup.cfg maps this package to the repository's ``fixtures/`` directory, so a
built wheel carries the corpus here and ``locate.default_fixtures`` finds it
after ``pip install``. In a checkout this directory holds only this file: the
runner reads ``fixtures/`` itself. Nothing imports this module.
"""
