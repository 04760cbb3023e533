"""Composition: the only place that turns names, paths and configuration into objects.

Map::

    providers   CHAT_PROVIDERS, EMBEDDING_PROVIDERS   provider name -> (extra, typed factory)
    backends    BACKENDS, register_backend            store name -> (settings, factory, extra,
                                                      default path)
    settings    Settings, load_settings               validated config (dict, YAML, env)
    environment environment_values                    the PYWRAPAI_* variables as a layer
    factories   make_llm, make_vector_store, ...      build each object from the settings
    object_graph NODES, ObjectGraph                   object -> factory + needs; lazy builder (CLI)
    container   Container, build_container            dependency-injector view of NODES (library)
    llm         LLM                                   the chat facade
    embedder    Embedder                              the embedding facade (over EmbedTexts)
    graph_llm   GraphLLM                              prompts + RAG + LLM
    cli         pywrapai-graph                        ingest / ask / prompts / stats

The tables are the single place per extension: settings names, the container's choices and
the default paths are derived from them.
"""
