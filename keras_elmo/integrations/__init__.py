"""Bulk embedding on other engines, at the edge of the package.

`beam/` (`pip install 'keras-elmo[beam]'`) and `spark/`
(`pip install 'keras-elmo[spark]'`) import the embedding engine
(`keras_elmo.embedding`) and nothing in the core imports them; only the
`keras-elmo embed --runner | --spark-master` commands do. Neither is
imported here, so `keras_elmo.integrations` needs neither extra.
"""
