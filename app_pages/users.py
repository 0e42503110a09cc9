"""Users (admins and owners): who may sign in, their roles; add people, change a role, disable, allow a domain."""

import streamlit as st

from app_pages import _shared
from evalcore.store.access import ROLES
from evalcore.views.text import literal_message, literal_name
from evalcore.views.users import role_table, user_choice, user_rows

store = _shared.store()
me = store.user
st.title("Users")
st.caption(
    "Who may use this store and what each may do. People sign in with the identity provider; their role is kept "
    "here, read again at every click: a change below applies to them at once."
)

users = store.users.all()
_shared.table(
    user_rows(users),
    height=min(38 + 35 * len(users), 38 + 35 * 15),
    column_config={
        "id": st.column_config.NumberColumn(width="small"),
        "name": st.column_config.TextColumn(width="medium", pinned=True),
        "email": st.column_config.TextColumn(width="medium"),
        "role": st.column_config.TextColumn(width="small"),
        "state": st.column_config.TextColumn(width="small"),
    },
)
if done := st.session_state.pop("users_done", None):
    st.success(literal_message(done), icon=":material/check_circle:")

left, right = st.columns(2, gap="large")
with left:
    st.subheader("Add a person")
    with st.form("add_user", clear_on_submit=True, border=False):
        c = st.columns([3, 1.4])
        email = c[0].text_input("E-mail", placeholder="ann@example.com", key="add_email")
        role = c[1].selectbox("Role", ROLES, index=ROLES.index("reviewer"), key="add_role")
        n = st.columns(2)
        name = n[0].text_input("Display name", placeholder="(the provider's)", key="add_name")
        provider = n[1].text_input(
            "Only through provider", placeholder="(any)", key="add_provider",
            help="An [auth] provider's name. Its sign-in then binds this e-mail even when the provider does not "
            "say it verified it (Microsoft Entra does not).",
        )  # fmt: skip
        if st.form_submit_button("Add", type="primary"):
            with _shared.saving("The person"):
                added = store.users.add(email, role, name=name.strip() or None, provider=provider.strip() or None)
                st.session_state["users_done"] = f"{added.label} may sign in as {added.role}."
                st.rerun()

    st.subheader("Allowed e-mail domains")
    domains = store.users.allowed_domains()
    if domains:
        st.markdown("\n".join(f"- **{literal_name(d)}**: {r}" for d, r in sorted(domains.items())))
    else:
        st.caption("None: only the people added here may come in.")
    with st.form("allow_domain", clear_on_submit=True, border=False):
        c = st.columns([3, 1.4], vertical_alignment="bottom")
        domain = c[0].text_input("Domain", placeholder="example.com", key="domain")
        given = c[1].selectbox("Comes in as", ["reviewer", "viewer", "not allowed"], key="domain_role")
        if st.form_submit_button("Set"):
            with _shared.saving("The domain"):
                store.users.allow_domain(domain, None if given == "not allowed" else given)
                st.session_state["users_done"] = f"The domain {domain.strip()} is set: {given}."
                st.rerun()

with right:
    st.subheader("Change a user")
    others = [u for u in users if u.id != me.id]
    if not others:
        st.caption("No one else yet.")
    else:
        by_id = {u.id: u for u in others}
        picked = st.selectbox(
            "User", list(by_id), key="user_pick",
            format_func=lambda i: user_choice(by_id[i]),
        )  # fmt: skip
        chosen = by_id[picked if picked in by_id else next(iter(by_id))]
        c = st.columns([2, 1, 1], vertical_alignment="bottom")
        new_role = c[0].selectbox("Role", ROLES, index=ROLES.index(chosen.role), key=f"role_of_{chosen.id}")
        if c[1].button("Set role", disabled=new_role == chosen.role, key="set_role"):
            with _shared.saving("The role"):
                changed = store.users.set_role(chosen, new_role)
                st.session_state["users_done"] = f"{changed.label} is now {changed.role}."
                st.rerun()
        verb = "Enable" if chosen.disabled else "Disable"
        if c[2].button(verb, icon=":material/block:" if verb == "Disable" else ":material/check:", key="able"):
            with _shared.saving("The change"):
                changed = store.users.enable(chosen) if chosen.disabled else store.users.disable(chosen)
                state = "disabled: they are out at their next click" if changed.disabled else "enabled"
                st.session_state["users_done"] = f"{changed.label} is {state}."
                st.rerun()

    st.subheader("Roles")
    roles = role_table()
    _shared.table(  # (what a role may do read whole: its rows wrap, the column a width of its own)
        roles, row_height=66, height=38 + 66 * len(roles),
        column_config={"Role": st.column_config.TextColumn(width=76), "May": st.column_config.TextColumn(width=365)},
    )  # fmt: skip
    st.caption(
        "The same from the command line: `evalcore users list | add EMAIL --role ROLE | set-role EMAIL ROLE | "
        "disable EMAIL | enable EMAIL | allow-domain DOMAIN ROLE`."
    )
