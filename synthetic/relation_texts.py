"""How questions and descriptions word each relation: noun phrases for its object or subject
("the country where {x} is located"), the questions asking for them, and "same ...?" comparisons.
The document sentences that state a relation are in ``phrasing.py``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class _RelText:
    fwd_np: tuple[str, ...]  # noun phrase for the object, {x} describes the subject
    fwd_q: tuple[str, ...]  # question asking for the object
    inv_np: tuple[str, ...] = ()  # noun phrase for the subject, {x} describes the object
    inv_q: tuple[str, ...] = ()
    same_q: tuple[str, ...] = ()  # yes/no "same object" comparison, {a} and {b} describe two subjects
    role: str = ""  # the object's role in comparison questions ("The director of which film ...")
    both_docs: bool = False  # the object's document states the fact too


_RELATIONS: dict[str, _RelText] = {
    "city_in": _RelText(
        fwd_np=(
            "the country where {x} is located",
            "the country that contains {x}",
            "the country in which {x} lies",
        ),
        fwd_q=(
            "In which country is {x} located?",
            "Which country is home to {x}?",
            "What country contains {x}?",
        ),
    ),
    "capital": _RelText(
        fwd_np=(
            "the capital of {x}",
            "the capital city of {x}",
            "the city that serves as the capital of {x}",
        ),
        fwd_q=(
            "What is the capital of {x}?",
            "Which city is the capital of {x}?",
            "What city serves as the capital of {x}?",
        ),
        inv_np=(
            "the country whose capital is {x}",
            "the country with {x} as its capital",
            "the nation governed from {x}",
        ),
        inv_q=(
            "Which country has {x} as its capital?",
            "Of which country is {x} the capital?",
            "Which nation is governed from {x}?",
        ),
    ),
    "university_in": _RelText(
        fwd_np=("the city where {x} is located", "the home city of {x}", "the city that hosts {x}"),
        fwd_q=("In which city is {x} located?", "Where is {x} based?", "Which city hosts {x}?"),
        inv_np=(
            "the university located in {x}",
            "the university based in {x}",
            "the university whose campus is in {x}",
        ),
        inv_q=(
            "Which university is located in {x}?",
            "What university is based in {x}?",
            "Which university has its campus in {x}?",
        ),
    ),
    "born_in": _RelText(
        fwd_np=("the birthplace of {x}", "the city where {x} was born", "the hometown of {x}"),
        fwd_q=("Where was {x} born?", "In which city was {x} born?", "What is the birthplace of {x}?"),
        inv_np=("the person born in {x}", "the person who was born in {x}", "the native of {x}"),
        inv_q=("Who was born in {x}?", "Which person was born in {x}?", "Who is a native of {x}?"),
        same_q=(
            "Were {a} and {b} born in the same city?",
            "Do {a} and {b} share the same birthplace?",
            "Is the birthplace of {a} the same as that of {b}?",
        ),
    ),
    "educated_at": _RelText(
        fwd_np=("the university attended by {x}", "the alma mater of {x}", "the school where {x} studied"),
        fwd_q=("Which university did {x} attend?", "Where did {x} study?", "What is the alma mater of {x}?"),
        inv_np=("the person who studied at {x}", "the graduate of {x}", "the alumnus of {x}"),
        inv_q=("Who studied at {x}?", "Who graduated from {x}?", "Which person is an alumnus of {x}?"),
        same_q=(
            "Did {a} and {b} attend the same university?",
            "Did {a} and {b} study at the same school?",
            "Do {a} and {b} have the same alma mater?",
        ),
    ),
    "married_to": _RelText(
        fwd_np=("the spouse of {x}", "the person married to {x}", "the partner of {x}"),
        fwd_q=("Who is {x} married to?", "Who is the spouse of {x}?", "To whom is {x} married?"),
    ),
    "directed_by": _RelText(
        fwd_np=("the director of {x}", "the person who directed {x}", "the filmmaker behind {x}"),
        fwd_q=("Who directed {x}?", "Who is the director of {x}?", "Which filmmaker directed {x}?"),
        inv_np=("the film directed by {x}", "the film that {x} directed", "the movie made by {x}"),
        inv_q=("Which film did {x} direct?", "What film was directed by {x}?", "Which movie did {x} make?"),
        same_q=(
            "Were {a} and {b} directed by the same person?",
            "Do {a} and {b} have the same director?",
            "Did the same filmmaker direct {a} and {b}?",
        ),
        role="director",
    ),
    "written_by": _RelText(
        fwd_np=("the screenwriter of {x}", "the writer of {x}", "the person who wrote {x}"),
        fwd_q=("Who wrote {x}?", "Who is the screenwriter of {x}?", "Who wrote the screenplay for {x}?"),
        inv_np=("the film written by {x}", "the film that {x} wrote", "the film scripted by {x}"),
        inv_q=(
            "Which film did {x} write?",
            "What film was written by {x}?",
            "Which film was scripted by {x}?",
        ),
        same_q=(
            "Were {a} and {b} written by the same person?",
            "Do {a} and {b} have the same screenwriter?",
            "Did the same writer write {a} and {b}?",
        ),
        role="screenwriter",
    ),
    "stars": _RelText(
        fwd_np=("the star of {x}", "the lead actor of {x}", "the actor who starred in {x}"),
        fwd_q=("Who starred in {x}?", "Who is the star of {x}?", "Which actor starred in {x}?"),
        inv_np=("the film starring {x}", "the film in which {x} starred", "the film featuring {x}"),
        inv_q=("Which film did {x} star in?", "In which film did {x} star?", "Which film features {x}?"),
    ),
    "founded_by": _RelText(
        fwd_np=("the founder of {x}", "the person who founded {x}", "the entrepreneur who started {x}"),
        fwd_q=("Who founded {x}?", "Who is the founder of {x}?", "Who started {x}?"),
        inv_np=("the company founded by {x}", "the company that {x} founded", "the firm started by {x}"),
        inv_q=(
            "Which company did {x} found?",
            "What company was founded by {x}?",
            "Which firm did {x} start?",
        ),
        same_q=(
            "Were {a} and {b} founded by the same person?",
            "Do {a} and {b} have the same founder?",
            "Did the same person found {a} and {b}?",
        ),
        role="founder",
    ),
    "headquartered_in": _RelText(
        fwd_np=(
            "the city where {x} is headquartered",
            "the headquarters city of {x}",
            "the city where {x} is based",
        ),
        fwd_q=(
            "Where is {x} headquartered?",
            "In which city is {x} based?",
            "Which city hosts the headquarters of {x}?",
        ),
        inv_np=(
            "the company headquartered in {x}",
            "the company based in {x}",
            "the firm with headquarters in {x}",
        ),
        inv_q=(
            "Which company is headquartered in {x}?",
            "What company is based in {x}?",
            "Which firm has its headquarters in {x}?",
        ),
        same_q=(
            "Are {a} and {b} headquartered in the same city?",
            "Are {a} and {b} based in the same city?",
            "Do {a} and {b} have their headquarters in the same city?",
        ),
    ),
    "ceo": _RelText(
        fwd_np=("the chief executive of {x}", "the CEO of {x}", "the person who leads {x}"),
        fwd_q=("Who is the CEO of {x}?", "Who leads {x}?", "Who is the chief executive of {x}?"),
        inv_np=("the company led by {x}", "the company whose CEO is {x}", "the firm run by {x}"),
        inv_q=(
            "Which company does {x} lead?",
            "Of which company is {x} the CEO?",
            "Which firm is run by {x}?",
        ),
        role="chief executive",
    ),
    "acquired_by": _RelText(
        fwd_np=("the company that acquired {x}", "the acquirer of {x}", "the buyer of {x}"),
        fwd_q=("Which company acquired {x}?", "Who bought {x}?", "What company took over {x}?"),
        inv_np=("the company acquired by {x}", "the company that {x} bought", "the firm taken over by {x}"),
        inv_q=(
            "Which company did {x} acquire?",
            "What company did {x} buy?",
            "Which firm was taken over by {x}?",
        ),
    ),
    "manufactured_by": _RelText(
        fwd_np=("the manufacturer of {x}", "the company that makes {x}", "the maker of {x}"),
        fwd_q=("Which company manufactures {x}?", "Who makes {x}?", "What company produces {x}?"),
        inv_np=("the product made by {x}", "the product that {x} manufactures", "the item produced by {x}"),
        inv_q=(
            "Which product does {x} make?",
            "What product is manufactured by {x}?",
            "Which item does {x} produce?",
        ),
        same_q=(
            "Are {a} and {b} made by the same company?",
            "Do {a} and {b} have the same manufacturer?",
            "Is the same company the maker of both {a} and {b}?",
        ),
        role="manufacturer",
    ),
    "designed_by": _RelText(
        fwd_np=("the designer of {x}", "the person who designed {x}", "the person behind the design of {x}"),
        fwd_q=("Who designed {x}?", "Who is the designer of {x}?", "Which person designed {x}?"),
        inv_np=("the product designed by {x}", "the product that {x} designed", "the device designed by {x}"),
        inv_q=(
            "Which product did {x} design?",
            "What product was designed by {x}?",
            "Which device did {x} design?",
        ),
        same_q=(
            "Were {a} and {b} designed by the same person?",
            "Do {a} and {b} have the same designer?",
            "Did the same person design {a} and {b}?",
        ),
        role="designer",
    ),
    "treats": _RelText(
        fwd_np=(
            "the disease treated by {x}",
            "the condition that {x} treats",
            "the illness treated with {x}",
        ),
        fwd_q=(
            "Which disease does {x} treat?",
            "What condition is {x} used to treat?",
            "What illness is treated with {x}?",
        ),
        inv_np=("the drug that treats {x}", "the medication used to treat {x}", "the treatment for {x}"),
        inv_q=(
            "Which drug treats {x}?",
            "What medication is used to treat {x}?",
            "What is the treatment for {x}?",
        ),
        same_q=(
            "Do {a} and {b} treat the same disease?",
            "Are {a} and {b} used against the same disease?",
            "Is the disease treated by {a} the same as the one treated by {b}?",
        ),
    ),
    "targets": _RelText(
        fwd_np=("the protein targeted by {x}", "the molecular target of {x}", "the protein that {x} acts on"),
        fwd_q=(
            "Which protein does {x} target?",
            "What is the molecular target of {x}?",
            "Which protein does {x} act on?",
        ),
        inv_np=("the drug that targets {x}", "the drug acting on {x}", "the medication that targets {x}"),
        inv_q=("Which drug targets {x}?", "What drug acts on {x}?", "Which medication targets {x}?"),
        same_q=(
            "Do {a} and {b} target the same protein?",
            "Do {a} and {b} act on the same protein?",
            "Is the target of {a} the same protein as the target of {b}?",
        ),
        role="target protein",
    ),
    "developed_by": _RelText(
        fwd_np=("the developer of {x}", "the company that developed {x}", "the firm behind {x}"),
        fwd_q=("Which company developed {x}?", "Who developed {x}?", "What company created {x}?"),
        inv_np=("the drug developed by {x}", "the drug that {x} developed", "the medication created by {x}"),
        inv_q=(
            "Which drug did {x} develop?",
            "What drug was developed by {x}?",
            "Which medication did {x} create?",
        ),
        same_q=(
            "Were {a} and {b} developed by the same company?",
            "Do {a} and {b} share the same developer?",
            "Did the same company develop {a} and {b}?",
        ),
        role="developer",
    ),
    "associated_with": _RelText(
        fwd_np=("the gene associated with {x}", "the gene linked to {x}", "the gene implicated in {x}"),
        fwd_q=(
            "Which gene is associated with {x}?",
            "What gene is linked to {x}?",
            "Which gene is implicated in {x}?",
        ),
        inv_np=(
            "the disease associated with {x}",
            "the disease linked to {x}",
            "the condition tied to mutations in {x}",
        ),
        inv_q=(
            "Which disease is associated with {x}?",
            "What disease is linked to {x}?",
            "Which condition is tied to mutations in {x}?",
        ),
        same_q=(
            "Are {a} and {b} associated with the same gene?",
            "Are {a} and {b} linked to the same gene?",
            "Is the gene linked to {a} the same as the gene linked to {b}?",
        ),
        role="associated gene",
    ),
    "caused_by": _RelText(
        fwd_np=("the organism that causes {x}", "the cause of {x}", "the pathogen behind {x}"),
        fwd_q=("What organism causes {x}?", "Which pathogen causes {x}?", "What is the cause of {x}?"),
        inv_np=("the disease caused by {x}", "the illness that {x} causes", "the condition triggered by {x}"),
        inv_q=(
            "Which disease does {x} cause?",
            "What illness is caused by {x}?",
            "Which condition is triggered by {x}?",
        ),
        same_q=(
            "Are {a} and {b} caused by the same organism?",
            "Do {a} and {b} have the same cause?",
            "Is the same pathogen behind {a} and {b}?",
        ),
        role="causative organism",
    ),
    "encodes": _RelText(
        fwd_np=("the protein encoded by {x}", "the protein that {x} codes for", "the protein product of {x}"),
        fwd_q=(
            "Which protein does {x} encode?",
            "What protein is encoded by {x}?",
            "Which protein does {x} code for?",
        ),
        inv_np=("the gene that encodes {x}", "the gene encoding {x}", "the gene coding for {x}"),
        inv_q=("Which gene encodes {x}?", "What gene codes for {x}?", "Which gene is {x} encoded by?"),
        both_docs=True,
    ),
    "found_in": _RelText(
        fwd_np=(
            "the organism in which {x} is found",
            "the host organism of {x}",
            "the species that carries {x}",
        ),
        fwd_q=(
            "In which organism is {x} found?",
            "Which species carries {x}?",
            "What is the host organism of {x}?",
        ),
        inv_np=("the gene found in {x}", "the gene that {x} carries", "the gene occurring in {x}"),
        inv_q=("Which gene is found in {x}?", "What gene does {x} carry?", "Which gene occurs in {x}?"),
        same_q=(
            "Are {a} and {b} found in the same organism?",
            "Do {a} and {b} occur in the same species?",
            "Is the host organism of {a} the same as that of {b}?",
        ),
        role="host organism",
    ),
    "isolated_in": _RelText(
        fwd_np=(
            "the city where {x} was first isolated",
            "the place where {x} was first isolated",
            "the city in which researchers first isolated {x}",
        ),
        fwd_q=(
            "Where was {x} first isolated?",
            "In which city was {x} first isolated?",
            "In what city did researchers first isolate {x}?",
        ),
        inv_np=(
            "the organism first isolated in {x}",
            "the organism that was first isolated in {x}",
            "the species first isolated in {x}",
        ),
        inv_q=(
            "Which organism was first isolated in {x}?",
            "What organism was first isolated in {x}?",
            "Which species was first isolated in {x}?",
        ),
        same_q=(
            "Were {a} and {b} first isolated in the same city?",
            "Were {a} and {b} both first isolated in one city?",
            "Is the city where {a} was first isolated the same as that of {b}?",
        ),
    ),
    "member_of": _RelText(
        fwd_np=("the band of {x}", "the band that {x} plays in", "the group {x} belongs to"),
        fwd_q=(
            "Which band is {x} a member of?",
            "What band does {x} play in?",
            "Which group does {x} belong to?",
        ),
        inv_np=("the member of {x}", "the musician who plays in {x}", "the musician in {x}"),
        inv_q=("Who is a member of {x}?", "Which musician plays in {x}?", "Who plays in {x}?"),
        same_q=(
            "Are {a} and {b} members of the same band?",
            "Do {a} and {b} play in the same band?",
            "Do {a} and {b} belong to the same group?",
        ),
        role="band",
    ),
    "recorded_by": _RelText(
        fwd_np=("the band that recorded {x}", "the group behind {x}", "the band whose album is {x}"),
        fwd_q=("Which band recorded {x}?", "Who recorded {x}?", "Which group made the album {x}?"),
        inv_np=("the album recorded by {x}", "the album that {x} recorded", "the record made by {x}"),
        inv_q=(
            "Which album did {x} record?",
            "What album was recorded by {x}?",
            "Which record did {x} make?",
        ),
        same_q=(
            "Were {a} and {b} recorded by the same band?",
            "Are {a} and {b} albums of the same group?",
            "Did the same band record {a} and {b}?",
        ),
        role="band",
    ),
    "produced_by": _RelText(
        fwd_np=("the producer of {x}", "the person who produced {x}", "the record producer behind {x}"),
        fwd_q=("Who produced {x}?", "Who is the producer of {x}?", "Which record producer worked on {x}?"),
        inv_np=("the album produced by {x}", "the album that {x} produced", "the record {x} produced"),
        inv_q=(
            "Which album did {x} produce?",
            "What album was produced by {x}?",
            "Which record did {x} produce?",
        ),
        same_q=(
            "Were {a} and {b} produced by the same person?",
            "Do {a} and {b} have the same producer?",
            "Did one producer make both {a} and {b}?",
        ),
        role="producer",
    ),
    "signed_to": _RelText(
        fwd_np=(
            "the record label of {x}",
            "the label that {x} is signed to",
            "the label releasing {x}'s music",
        ),
        fwd_q=(
            "Which label is {x} signed to?",
            "What is the record label of {x}?",
            "Which label releases {x}'s music?",
        ),
        inv_np=("the band signed to {x}", "the band on {x}", "the group under contract with {x}"),
        inv_q=(
            "Which band is signed to {x}?",
            "What band is on {x}?",
            "Which group has a contract with {x}?",
        ),
        same_q=(
            "Are {a} and {b} signed to the same label?",
            "Do {a} and {b} have the same record label?",
            "Is the label of {a} the same as that of {b}?",
        ),
        role="record label",
    ),
    "formed_in": _RelText(
        fwd_np=("the city where {x} was formed", "the home town of {x}", "the city {x} comes from"),
        fwd_q=("Where was {x} formed?", "In which city was {x} formed?", "Which city does {x} come from?"),
        inv_np=("the band formed in {x}", "the band that got together in {x}", "the group from {x}"),
        inv_q=(
            "Which band was formed in {x}?",
            "What band got together in {x}?",
            "Which group comes from {x}?",
        ),
        same_q=(
            "Were {a} and {b} formed in the same city?",
            "Do {a} and {b} come from the same city?",
            "Did {a} and {b} get together in one city?",
        ),
    ),
    "plays_for": _RelText(
        fwd_np=("the club {x} plays for", "the team of {x}", "the club that {x} represents"),
        fwd_q=(
            "Which club does {x} play for?",
            "What team does {x} play for?",
            "Which club does {x} represent?",
        ),
        inv_np=("the player of {x}", "the athlete who plays for {x}", "the footballer at {x}"),
        inv_q=("Who plays for {x}?", "Which athlete plays for {x}?", "Which footballer is at {x}?"),
        same_q=(
            "Do {a} and {b} play for the same club?",
            "Are {a} and {b} on the same team?",
            "Do {a} and {b} represent the same club?",
        ),
        role="club",
    ),
    "coached_by": _RelText(
        fwd_np=("the coach of {x}", "the manager of {x}", "the person who coaches {x}"),
        fwd_q=("Who coaches {x}?", "Who is the coach of {x}?", "Who manages {x}?"),
        inv_np=("the club coached by {x}", "the team that {x} coaches", "the club managed by {x}"),
        inv_q=("Which club does {x} coach?", "What team is coached by {x}?", "Which club does {x} manage?"),
        same_q=(
            "Are {a} and {b} coached by the same person?",
            "Do {a} and {b} have the same coach?",
            "Does one coach manage both {a} and {b}?",
        ),
        role="coach",
    ),
    "home_ground": _RelText(
        fwd_np=("the home stadium of {x}", "the ground where {x} plays", "the stadium {x} plays at"),
        fwd_q=(
            "Where does {x} play its home games?",
            "What is the home stadium of {x}?",
            "At which stadium does {x} play?",
        ),
        inv_np=("the club that plays at {x}", "the team based at {x}", "the club whose ground is {x}"),
        inv_q=("Which club plays at {x}?", "What team is based at {x}?", "Whose home ground is {x}?"),
        same_q=(
            "Do {a} and {b} play at the same stadium?",
            "Do {a} and {b} share a home ground?",
            "Is the home stadium of {a} the same as that of {b}?",
        ),
        role="home stadium",
    ),
    "stadium_in": _RelText(
        fwd_np=("the city where {x} stands", "the city that is home to {x}", "the location of {x}"),
        fwd_q=("In which city is {x}?", "Where does {x} stand?", "Which city is home to {x}?"),
        inv_np=("the stadium in {x}", "the stadium that stands in {x}", "the arena located in {x}"),
        inv_q=("Which stadium is in {x}?", "What stadium stands in {x}?", "Which arena is located in {x}?"),
        same_q=(
            "Are {a} and {b} in the same city?",
            "Do {a} and {b} stand in the same city?",
            "Is the city of {a} the same as that of {b}?",
        ),
    ),
}
