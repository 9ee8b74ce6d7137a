"""The lowest floor: reading YAML as kubectl reads it (``yamlreader``), walking and writing files
under a root (``files``), building kustomizations (``kustomize``), bounded quotes for messages
(``excerpt``) and the optional extras' checks (``extras``).

Everything else builds on these modules, and they import nothing of the rest of the product, so
schemas/, render/, the reconciler and the command line all read input and quote it one way.
"""
