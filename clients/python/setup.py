# Everything is in pyproject.toml. Only the Home-page field, which `pip show` prints (it does not
# read Project-URL), has no place there: setuptools takes it from here.
from setuptools import setup

setup(url="https://github.com/image-worker/image-worker")
