"""evalcore's Streamlit app: the frame around every page."""

import streamlit as st

st.set_page_config(page_title="evalcore", page_icon="🧭", layout="wide")

navigation = st.navigation(
    [
        st.Page("pages/files.py", title="Files", icon="📂", default=True),
    ]
)
st.sidebar.caption("evalcore: review, annotate, score and export agent conversations.")
navigation.run()
